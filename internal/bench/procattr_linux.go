package main

import "syscall"

// childAttr makes a child die with this program, so that an interrupted
// run leaves no replica or etcd behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
