package cronx

import (
	"context"
	"errors"

	"github.com/batonhq/baton/internal/emptyetcd"
)

// watchEmpty logs an error each time the coordinator's etcd is found to
// have come back empty (emptyetcd.Watch), until the returned function
// is called, which stops the watch and waits for it.
func (co *coordinator) watchEmpty(ctx context.Context) (stop func()) {
	client := co.etcd()
	if client == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		emptyetcd.Watch(ctx, client, co.prefix, co.identity, func(e emptyetcd.Event) {
			co.logger.Error(errors.New(e.Why), "cronx: etcd came back empty; lost with its data: "+emptyetcd.Lost,
				"scheduler", co.name, "instance", co.identity)
			co.obs.emit(EtcdEmpty{Scheduler: co.name, Instance: co.identity, Why: e.Why})
		})
	}()
	return func() { cancel(); <-done }
}
