//go:build !linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

var errNoProcTree = errors.New("the process tree is known on Linux only")

// becomeSubreaper is Linux only: elsewhere an orphan goes to init.
func becomeSubreaper() error { return errNoProcTree }

// parents is Linux only: elsewhere the command's process group is all
// that is known of its descendants.
func parents() (map[int]int, error) { return nil, errNoProcTree }

// zombie is Linux only.
func zombie(pid int) bool { return false }

// commandAttr is the command's own process group; the parent-death signal
// is Linux only.
func commandAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func startLocked(cmd *exec.Cmd) error { return cmd.Start() }

// inForeground is Linux only: elsewhere a command stays in a process group
// of its own, in the terminal's background.
func inForeground(f *os.File) bool { return false }

func foregroundAttr(attr *syscall.SysProcAttr, fd int) {}

func giveTerminalBack(fd, from, pgrp int) {}

func foregroundGroup(fd int) (int, error) { return 0, errNoProcTree }

// hasEnv is Linux only.
func hasEnv(pid int, prefix string) bool { return false }
