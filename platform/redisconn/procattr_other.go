//go:build !linux

package redisconn

import "syscall"

// childProcAttr is empty where the kernel cannot tie a child's life to its parent: a
// crashed parent leaves the child redis-server running until it is stopped by hand.
func childProcAttr() *syscall.SysProcAttr { return nil }
