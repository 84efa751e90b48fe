//go:build !linux

package main

import (
	"os/exec"
	"syscall"
)

// parentDeath is Linux only; elsewhere the supervisor's lifeline alone
// takes the command down with baton.
func parentDeath() *syscall.SysProcAttr { return nil }

func startLocked(cmd *exec.Cmd) error { return cmd.Start() }
