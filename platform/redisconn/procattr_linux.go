package redisconn

import "syscall"

// childProcAttr asks the kernel to stop the child redis-server if this process dies without
// Close, so a crashed `boxoffice up` leaves no orphan, and gives the child a process group of
// its own, so a terminal's Ctrl-C reaches only this process and Close stops the child after
// the components drain. Trade-off: the death signal is tied to the OS thread that started the
// child; should Go retire it (a goroutine exiting while locked to it), the child stops early,
// seen as store errors the limiter survives: a rarer harm than an orphan after every crash.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
}
