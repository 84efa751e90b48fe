package cronx

import (
	"context"
	"errors"

	"github.com/batonhq/baton/internal/emptyetcd"
)

// watchEmpty logs an error each time the coordinator's etcd is found to
// have come back empty (emptyetcd.Watch), until the returned function
// is called, which stops the watch and waits for it. It looks when it
// starts and at each recheckEmpty: when this replica begins a term or gets
// a new runners' session. An etcd that lost its data lost every lease, so
// a new term or session follows on some replica; a follower that only
// waits sends nothing.
func (co *coordinator) watchEmpty(ctx context.Context) (stop func()) {
	client := co.etcd()
	if client == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		emptyetcd.Watch(ctx, client, co.prefix, co.identity, co.emptyCheck, func(e emptyetcd.Event) {
			co.logger.Error(errors.New(e.Why), "cronx: etcd came back empty; lost with its data: "+emptyetcd.Lost,
				"scheduler", co.name, "instance", co.identity)
			co.obs.emit(EtcdEmpty{Scheduler: co.name, Instance: co.identity, Why: e.Why})
		})
	}()
	return func() { cancel(); <-done }
}

// recheckEmpty asks the empty-etcd watch to look again; it never blocks,
// and asks made while a look is pending count once.
func (co *coordinator) recheckEmpty() {
	select {
	case co.emptyCheck <- struct{}{}:
	default:
	}
}
