package main

// treeHelp says, in `baton run --help` and `baton crontab --help`, what
// becomes of the processes a command starts, limits included.
const treeHelp = `Every process a command starts, in whatever session or process group
(setsid, a daemon that double-forks), is part of its run: baton passes its
signals to all of them, and gives up the lock, term or claim, and exits, only
once none is left. What a command leaves running when it exits by itself
gets SIGTERM and, a second later, SIGKILL (run a daemon in the foreground).
Once baton stops a command (on SIGTERM, at a timeout, when a run is
replaced), its whole tree gets the same --grace: a program that the shell
forked keeps the rest of it when the shell dies first. A command
runs under a supervisor (` + "`baton _supervise`" + `): if baton is killed, even
by kill -9, the supervisor kills them all at once, long before baton's lease
expires; if the supervisor is killed, the command gets SIGKILL and baton
kills the rest, every process with the command's BATON_FENCE in its
environment, before it reports the run's end (status 137); other processes
left to baton (an exec session's, with baton a container's PID 1) are only
reaped once they exit. On Linux both
are child subreapers (prctl PR_SET_CHILD_SUBREAPER), so a descendant whose
parent exits stays in the tree, and /proc shows it there. What remains
possible: baton and its supervisor killed at the same instant (kill -9 of
both, the OOM killer taking both) leave the descendants to init, unless the
kernel ends them with baton's container (baton its main process) or systemd
with its unit; a process that another daemon starts on a command's behalf
(at, systemd-run, docker, ssh) is not its descendant; one that runs as
another user (sudo), which baton may not signal, keeps the run open until
it exits; one that clears its environment (env -i) outlives a killed
supervisor; outside Linux only the command's process group is known.

Commands get baton's environment less BATON_HTTP, which configures this
baton's own server (a baton run inside a command would fail to bind it),
and with the connection baton uses, flags included: BATON_ETCD_ENDPOINTS,
BATON_PREFIX, BATON_ETCD_USERNAME, BATON_ETCD_PASSWORD, BATON_ETCD_CA,
BATON_ETCD_CERT and BATON_ETCD_KEY, so a nested baton reaches the same etcd
under the same prefix.

An etcd certificate baton cannot verify (no BATON_ETCD_CA, the wrong CA, a
host name the certificate lacks) is an error at once naming the x509 cause
and what to change; so is etcd refusing the credentials, or baton's client
certificate (none given where etcd runs with --client-cert-auth, another
CA's, an expired one), and TLS on one side only (http:// to a TLS port,
https:// to a plain one). A dial that has not succeeded within 250 ms gets
baton's own handshake with each endpoint to find such a cause. A user and
password in an endpoint URL (http://app:secret@etcd:2379, everything up to
the last "@") are taken off before anything reads the URL and used as
--username and --password (given both ways, they must be the same); no
error or log line shows the password, however malformed the URL. A
password with a comma cannot be written there (the list is split on
commas): give it with --password or BATON_ETCD_PASSWORD. A configuration
that can never work (a malformed endpoint, a user without a password) is a
usage error in every command: 2, 122 in baton run.`
