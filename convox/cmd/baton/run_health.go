package main

import (
	"context"
	"errors"
	"sync"
)

// waitLoop is what /healthz asks of baton run: while COMMAND runs, exec's
// loop, which waits for COMMAND, for the end of the fence and for a stop
// signal, answers each check; a loop that does not answer fails it. While
// baton campaigns or waits for a lock or a claim there is no loop of its
// own to check: etcd is waited for, and /readyz says whether it answers.
type waitLoop struct {
	mu   sync.Mutex
	ping chan chan struct{} // non-nil while exec's loop serves it
}

// serve returns the channel exec's loop answers checks on, and the func
// to call when the loop ends.
func (l *waitLoop) serve() (<-chan chan struct{}, func()) {
	if l == nil {
		return nil, func() {}
	}
	ping := make(chan chan struct{})
	l.mu.Lock()
	l.ping = ping
	l.mu.Unlock()
	return ping, func() {
		l.mu.Lock()
		l.ping = nil
		l.mu.Unlock()
	}
}

func (l *waitLoop) current() chan chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ping
}

// alive reports nil when no loop runs or the loop answered within ctx.
func (l *waitLoop) alive(ctx context.Context) error {
	ping := l.current()
	if ping == nil {
		return nil
	}
	reply := make(chan struct{}, 1)
	select {
	case ping <- reply:
		select {
		case <-reply:
			return nil
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
	if l.current() != ping {
		return nil // the loop ended meanwhile: COMMAND is done
	}
	return errors.New("baton run: the loop that waits for COMMAND did not answer: " + context.Cause(ctx).Error())
}
