// Package manifest reads, completes and checks a Convox v3 convox.yml for
// baton: the `baton convox init` and `baton convox check` commands.
//
// A manifest is parsed into yaml.v3 nodes, never into structs, so nothing
// of the file is lost: Init adds what it needs by inserting lines into the
// original bytes, keeping every comment, blank line, key order, quoting
// style and anchor as they were, and checks that the result means what the
// edited node tree means. Where a file's layout does not allow that (a flow
// mapping such as `services: {}`, a `|+` block scalar at the end of a
// section), Init re-encodes the node tree instead, which keeps comments, key
// order and anchors but not blank lines. Running Init on its own output
// changes nothing.
//
// Init adds the bundled etcd service (one member `etcd`, or three members
// `etcd-0`, `etcd-1`, `etcd-2` with a static --initial-cluster), and
// BATON_ETCD_ENDPOINTS to the app-level environment, which Convox gives to
// every service, with the names (never the values) of BATON_ETCD_USERNAME
// and BATON_ETCD_PASSWORD when the etcd is `baton etcd`, which sets up auth
// from them. An etcd service already there is completed, not duplicated,
// and a value already written is never changed. Its data is on an emptyDir
// or, with Options.Storage EFS, an awsEfs volume.
//
// Every release of an app restarts every service of it, an etcd inside it
// included, so the recommended layout gives etcd a Convox app of its own:
// EtcdAppManifest writes that app's manifest, and Init with
// Options.EtcdApp points the app at it (etcd.NAME.convox.local) and adds no
// etcd service. Notes says what each release does to an etcd left in the
// app; it is not a problem.
//
// Check reports, with baton's own rules, what would make baton run a tick
// twice, or not at all, on Convox:
//
//   - a service or timer that runs baton with no etcd reachable by the name
//     BATON_ETCD_ENDPOINTS gives (or, without it, by the default
//     http://etcd:2379); a name of another app (etcd.NAME.convox.local, the
//     etcd app's layout) is outside the manifest;
//   - an etcd service that is not `singleton: true` or not `internal: true`,
//     that can scale past one process or is an agent (each process would be
//     a separate cluster), whose client or peer port is not exposed, whose
//     readiness check cannot pass, or whose emptyDir or awsEfs volume is not
//     where etcd keeps its data;
//   - a timer that does not go through `baton run --once`, since a Convox
//     timer is a Kubernetes CronJob, which may start one schedule twice;
//   - a service that lists a BATON_* variable without a value, cancelling
//     the app-level default;
//
// and, with a few of Convox's rules kept in line with Convox's own manifest
// code (convox/convox pkg/manifest, see schema.go and forms.go), what
// Convox would reject or silently drop: names, the services and resources
// that timers and services name, resource types, internal with
// internalRouter, deployment percentages, a ? left in a timer's schedule,
// the form of the keys baton's rules read, unknown keys at the top level
// and in services, timers and resources (Convox ignores them, so a misspelt
// `enviroment:` is lost), keys given twice, and environment entries Convox
// skips. Each Problem says whose rule it is about.
//
// Check does not stand in for Convox's own checks: LeftToConvox names the
// parts of a manifest whose rules Check does not check (budget, balancers,
// a service's build or scale.autoscale, variables to set with `convox env
// set`, ...), which Convox checks itself at deploy.
//
// Every problem carries the line it is about.
package manifest
