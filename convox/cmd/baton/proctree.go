package main

import "syscall"

// The process tree of a command, as the kernel keeps it. On Linux a
// supervisor and baton itself are child subreapers (prctl(2),
// PR_SET_CHILD_SUBREAPER): a process whose parent dies is reparented to
// the nearest living subreaper among its ancestors instead of to init. So
// a daemon that double-forks, or calls setsid(2) to leave its session and
// process group, stays a descendant of the supervisor that started its
// command, and /proc shows it there; and when a supervisor is killed,
// what it watched becomes baton's. Elsewhere only the command's process
// group is known.

// descendants returns every descendant of root in parents (pid → parent
// pid), nearest first.
func descendants(root int, parents map[int]int) []int {
	children := make(map[int][]int, len(parents))
	for pid, ppid := range parents {
		if pid != ppid {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// waitPid reaps pid, a child of this process, retrying on EINTR.
func waitPid(pid int) {
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			return
		}
	}
}
