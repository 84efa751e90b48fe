package cronx

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/claims"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// An etcd that refuses a write is not an outage: it answers, and says no.
// It is out of space (the NOSPACE alarm it raises at --quota-backend-bytes,
// which stays until an operator frees space and disarms it), the user's role
// may not write under the prefix, the request is larger than
// --max-request-bytes (or than the client sends: its MaxCallSendMsgSize,
// 2 MiB unless set) or has more operations than --max-txn-ops, or the
// cluster is corrupt. No tick can be claimed until an operator acts, so the
// first refusal of a claim is an error in the log, in etcd's words, and an
// event (OnEtcdRefused). Claims are retried meanwhile as while etcd does not
// answer, so a tick still runs if etcd accepts it again within its misfire
// deadline; one still refused then is not run, with ReasonEtcdRefused.
//
// While etcd refuses, a write that changes nothing is sent every
// refusalProbe (limits.go), so that the replica hears that etcd accepts writes again
// (OnEtcdAccepted, and a line at info level) when no tick is due. A small
// write says nothing of a request too large or with too many operations:
// those refusals last until a claim is accepted.

// etcdRefusal returns etcd's refusal that err is, nil when it is none, and
// whether a write that changes nothing tells when etcd accepts such
// requests again.
func etcdRefusal(err error) (refusal error, probe bool) {
	if err == nil {
		return nil, false
	}
	for _, r := range []error{rpctypes.ErrNoSpace, rpctypes.ErrPermissionDenied, rpctypes.ErrCorrupt} {
		if errors.Is(err, r) {
			return r, true
		}
	}
	if claims.TooLarge(err) {
		// etcd's --max-request-bytes, or the client's limit on what it
		// sends, which refuses the request before etcd sees it.
		return rpctypes.ErrRequestTooLarge, false
	}
	if errors.Is(err, rpctypes.ErrTooManyOps) {
		return rpctypes.ErrTooManyOps, false
	}
	return nil, false
}

// refusals knows whether etcd refuses this replica's claims now.
type refusals struct {
	name     string
	identity string
	probeKey string // the scheduler's directory, which claims write under
	client   func() *clientv3.Client
	ctx      func() context.Context // the coordinator's, which ends on Stop
	now      func() time.Time
	runs     *jobWaiter // the client outlives the probe
	logger   Logger
	obs      observers

	mu      sync.Mutex
	err     error // etcd's last refusal, an rpctypes error; nil while it accepts writes
	probe   bool  // a write that changes nothing tells when err is over
	probing bool  // a probe loop runs
}

func newRefusals(co *coordinator) *refusals {
	return &refusals{
		name:     co.name,
		identity: co.identity,
		probeKey: co.writes.dir(),
		client:   co.conn.etcd,
		ctx:      co.runCtx,
		now:      co.clock.Now,
		runs:     &co.work,
		logger:   co.logger,
		obs:      co.rep.obs,
	}
}

// refused notes a claim that failed with err, and reports whether etcd
// refused it. The first refusal is logged and told; one in other words is
// logged.
func (rf *refusals) refused(err error) bool {
	refusal, probe := etcdRefusal(err)
	if refusal == nil {
		return false
	}
	rf.mu.Lock()
	first := rf.err == nil
	changed := rf.err != refusal
	rf.err, rf.probe = refusal, probe
	startProbe := probe && !rf.probing
	if startProbe {
		rf.probing = true
	}
	rf.mu.Unlock()
	if changed {
		rf.logger.Error(err, "cronx: etcd refuses writes; no tick runs until it accepts them",
			"scheduler", rf.name, "instance", rf.identity)
	}
	if first {
		rf.obs.emit(etcdRefused{Scheduler: rf.name, Instance: rf.identity, Time: rf.now(), Err: err})
	}
	if startProbe {
		rf.runs.add()
		go rf.probeLoop(rf.ctx())
	}
	return true
}

// accepted notes that etcd took a write, or answered a claim (a claim's
// compare is checked only once etcd has accepted to write).
func (rf *refusals) accepted() {
	rf.mu.Lock()
	was := rf.err
	rf.err = nil
	rf.mu.Unlock()
	if was == nil {
		return
	}
	notice(rf.logger, "cronx: etcd accepts writes again", "scheduler", rf.name, "instance", rf.identity, "refused", was)
	rf.obs.emit(etcdAccepted{Scheduler: rf.name, Instance: rf.identity, Time: rf.now()})
}

// probeLoop sends a write that changes nothing every refusalProbe while
// etcd refuses for a reason it tells, until it is accepted or ctx ends.
func (rf *refusals) probeLoop(ctx context.Context) {
	defer rf.runs.done()
	for {
		if ctx != nil {
			sleep(ctx, refusalProbe) // etcd's pace: real time
		}
		rf.mu.Lock()
		if ctx == nil || ctx.Err() != nil || rf.err == nil || !rf.probe {
			rf.probing = false
			rf.mu.Unlock()
			return
		}
		rf.mu.Unlock()
		err := rf.probeOnce(ctx)
		switch {
		case err == nil:
			rf.accepted()
		default:
			rf.refused(err) // an answer of other words is logged
		}
	}
}

// probeOnce asks etcd for a transaction that would write under the
// scheduler's directory, with a condition that never holds: etcd refuses it
// as it would a claim, and writes nothing when it accepts it.
func (rf *refusals) probeOnce(ctx context.Context) error {
	cli := rf.client()
	if cli == nil {
		return ErrEtcdUnreachable
	}
	pctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	_, err := cli.Txn(pctx).
		If(clientv3.Compare(clientv3.Version(rf.probeKey), "<", 0)).
		Then(clientv3.OpPut(rf.probeKey, "")).
		Commit()
	return err
}
