package redisconn

import "syscall"

// childProcAttr asks the kernel to stop the child redis-server if this process dies
// without calling Close, so a crashed `boxoffice up` leaves no orphan behind, and puts the
// child in a process group of its own, so that a Ctrl-C at the terminal, which signals the
// whole foreground group, reaches only this process: the child keeps serving while the
// components drain, and Close stops it after them.
// Trade-off: the kernel ties the death signal to the OS thread that started the child, and
// Go retires a thread when a goroutine exits while locked to it (runtime.LockOSThread).
// Should that happen to this thread, the child stops early and shows up as store errors,
// which the limiter already survives; an orphan after every crash would be the commoner harm.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
}
