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
// Check reports what would make baton run a tick twice, or not at all, on
// Convox:
//
//   - a service or timer that runs baton with no etcd reachable by the name
//     BATON_ETCD_ENDPOINTS gives (or, without it, by the default
//     http://etcd:2379);
//   - an etcd service that is not `singleton: true` or not `internal: true`,
//     that can scale past one process (each process would be a separate
//     cluster), whose client or peer port is not exposed, or whose readiness
//     check cannot pass;
//   - a timer that does not go through `baton run --once`, since a Convox
//     timer is a Kubernetes CronJob, which may start one schedule twice;
//
// and what Convox itself would reject or silently ignore: names other than
// lowercase letters, digits and dashes; unknown keys (Convox ignores them,
// so a misspelt `singelton` is lost); values of the wrong form (port, ports,
// scale, deployment percentages, health, booleans, environment entries);
// timers and services that name a service or resource that does not exist;
// and duplicate keys. The key lists follow Convox's v3 manifest reference;
// a key Convox added after them is reported as unknown.
//
// Every problem carries the line it is about.
package manifest
