package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/batonhq/baton/internal/emptyetcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// firstLookTimeout bounds baton run's look at etcd before COMMAND starts;
// lossLookTimeout its look after a loss, which delays its exit when etcd
// does not answer (a partition), so it is shorter.
const (
	firstLookTimeout = 5 * time.Second
	lossLookTimeout  = 3 * time.Second
)

// emptyLook tells baton run's user when a lost term, lock or claim was lost
// with etcd's data: it takes etcd's measure before COMMAND starts, and
// looks again once the loss has stopped COMMAND. A wiped etcd first looks
// like an unreachable one, so every loss is looked into, briefly.
type emptyLook struct {
	checker *emptyetcd.Checker
}

// lookAtEtcd takes the measure of the etcd of cli under prefix. A look that
// fails leaves nothing to compare with, so the loss is then not explained.
func lookAtEtcd(ctx context.Context, cli *clientv3.Client, prefix, identity string) *emptyLook {
	l := &emptyLook{checker: emptyetcd.NewChecker(cli, prefix, identity)}
	ctx, cancel := context.WithTimeout(ctx, firstLookTimeout)
	defer cancel()
	_, _, _ = l.checker.Check(ctx)
	return l
}

// afterLoss looks again, and says on w when etcd came back empty. A look
// that etcd does not answer says nothing. A nil *emptyLook does nothing.
func (l *emptyLook) afterLoss(w io.Writer) {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lossLookTimeout)
	defer cancel()
	if e, empty, _ := l.checker.Check(ctx); empty {
		fmt.Fprintf(w, "baton run: etcd came back empty (%s); lost with its data: %s\n", e.Why, emptyetcd.Lost)
	}
}
