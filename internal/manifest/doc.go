// Package manifest reads, completes and checks a Convox v3 convox.yml for
// baton: the `baton convox init` and `baton convox check` commands.
//
// A manifest is read as Convox's own parser reads it (convox/convox
// pkg/manifest, on gopkg.in/yaml.v2; see yaml.go): a merge key inside
// services, timers, resources or balancers counts for nothing there, a
// quoted "<<" is merged, the last of a key given twice wins, but for a
// top-level environment, services, timers or resources given twice, whose
// blocks Convox reads one after the other (its struct fields' UnmarshalYAML
// appends, pkg/manifest/yaml.go), and so does check. Every rule
// below judges what Convox would deploy, not what the YAML seems to say.
//
// Init edits the yaml.v3 node tree of the file and writes it back: comments,
// blank lines, key order, anchors, quoting and the file's indentation step
// are kept, merge keys stay <<, and a comment after a value gets one space
// before it. It never writes into an anchor or a merge key. It adds the
// bundled etcd service (one member `etcd`, or three members `etcd-0`,
// `etcd-1`, `etcd-2` with a static --initial-cluster), and
// BATON_ETCD_ENDPOINTS to the app-level environment, which Convox gives to
// every service, with the names (never the values) of BATON_ETCD_USERNAME
// and BATON_ETCD_PASSWORD when the etcd is `baton etcd`, which sets up auth
// from them. An etcd service already there is completed, not duplicated,
// and a value already written is never changed. Services that run baton
// with no web server of their own get baton's /healthz as their readiness
// and liveness checks, and a single etcd member /health and /livez.
//
// A promoted release of an app restarts every service of it, an etcd
// inside it included, so the recommended layout gives etcd a Convox app of
// its own: EtcdAppManifest writes that app's manifest, and Init with
// Options.EtcdApp points the app at it, at an address that holds on a rack
// of any name (EtcdAppEndpoint).
//
// Check reports, with baton's own rules, what would make baton run a tick
// twice, or not at all, on Convox:
//
//   - a service or timer that runs baton with no etcd reachable by the name
//     BATON_ETCD_ENDPOINTS gives (or, without it, by the default
//     http://etcd:2379); a dotted name, such as the etcd app's, is outside
//     the manifest;
//   - an etcd service that is not `singleton: true` or not `internal: true`,
//     whose scale lets it run more than one process or that is an agent
//     (each process would be a separate cluster), whose client or peer port
//     is not exposed, whose readiness or liveness check asks a path etcd
//     does not serve, or whose emptyDir or awsEfs volume is not where etcd
//     keeps its data;
//   - a timer that does not go through `baton run --once`, since a Convox
//     timer is a Kubernetes CronJob, which may start one schedule twice;
//   - a service that lists a BATON_* variable without a value, cancelling
//     the app-level default;
//
// and what Convox's parser drops without a word: unknown keys at the top
// level, in services, timers and resources, and in a service's health and
// liveness; keys given twice; environment entries that are not strings;
// merge keys inside services, timers, resources and balancers. What Convox
// refuses it says itself at deploy, and Check leaves to it. Notes says what
// Convox does to each etcd service that no manifest changes. Each Problem
// carries the line it is about.
//
// What this package says of Convox rests on Convox's code alone; no rack
// was at hand to try it on.
package manifest
