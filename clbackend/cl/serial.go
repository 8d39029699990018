package cl

import "sync"

// POCL 3.1's basic driver is not safe to use from several threads at once.
//
// POCL's CPU drivers share one process-wide cache of loaded work-group
// functions (lib/CL/devices/common.c): a kernel launch takes a reference
// on the entry that matches its kernel hash, local size, grid width,
// specialization and global offset (pocl_check_kernel_dlhandle_cache),
// and its completion drops a reference on the first entry, most recently
// used first, that matches the hash and the local size alone
// (pocl_release_dlhandle_cache, which asserts the count is above 0).
// Where one kernel has two entries (it ran on a narrow grid and then on a
// wider one, or at a global offset and at none, in one model or in two
// models built from the same source), a completion can drop the other
// entry's reference. The pthread driver
// takes two references per launch and drops one, so its counts never
// reach 0 (and its entries are never evicted); the basic driver takes one
// and drops one, so two of its launches of one kernel in flight at once,
// in two threads, abort the process (`found->ref_count > 0'). The basic
// driver takes the reference when the command is enqueued and runs the
// command, dropping it, in the same call where nothing holds it back (an
// in-order queue whose earlier commands are done: always so on basic,
// which runs each command as it is enqueued). So basicMu, held around
// every call that enqueues on, flushes or finishes a queue of a POCL basic
// device, leaves at most one of its launches in flight in the process.
// The entries of different devices never match (POCL's kernel hash
// covers the device's build hash, "basic-..." or "pthread-..."), so the
// pthread device needs no lock.
var basicMu sync.Mutex

// unlockNone is serialize's result on a queue that needs no lock.
func unlockNone() {}

// serialize takes basicMu where q is a queue of a POCL basic device and
// returns what releases it.
func (q *CommandQueue) serialize() (unlock func()) {
	if q == nil || !q.serial {
		return unlockNone
	}
	basicMu.Lock()
	return basicMu.Unlock
}

// serialDevice reports whether d is a device of POCL's basic driver, whose
// queues serialize.
func serialDevice(d *Device) bool {
	return d != nil && poclDriver(d) == "basic"
}
