package devstack

import "syscall"

// childAttr puts a child in its own process group, so a Ctrl-C meant for dev does not stop it
// before dev has stopped using it, and makes it die with this process, so a crashed dev never
// leaves a redis-server behind writing to the data dir.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
