package driver

import (
	"bytes"
	"runtime"
	"strconv"
)

// enterCallback records that the calling goroutine runs one of the
// request's callbacks and returns its ID for leaveCallback.
func (r *AsyncInferRequest) enterCallback() uint64 {
	g := goroutineID()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inCallback == nil {
		r.inCallback = map[uint64]int{}
	}
	r.inCallback[g]++
	return g
}

// leaveCallback undoes enterCallback.
func (r *AsyncInferRequest) leaveCallback(g uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inCallback[g]--; r.inCallback[g] <= 0 {
		delete(r.inCallback, g)
	}
}

// fromCallbackLocked returns an error wrapping ErrBusy when the calling
// goroutine is running one of the request's callbacks, where what (Wait,
// Close) would wait for the callback itself; r.mu is held.
func (r *AsyncInferRequest) fromCallbackLocked(what string) error {
	if len(r.inCallback) == 0 || r.inCallback[goroutineID()] == 0 {
		return nil
	}
	return errorf(ErrBusy, "plugin: request %d: %s called from the request's own callback, which runs before the run is over and would wait for itself; "+
		"the callback's argument is the run's result, and Close belongs after the last Wait, outside the callback", r.id, what)
}

// goroutineID returns the calling goroutine's ID, read from the first line
// of its stack trace ("goroutine 42 [running]:"). Go gives no other way to
// tell that Wait or Close runs on the goroutine of the callback it would
// wait for; it is read only around callbacks, and by Wait and Close while
// a callback runs.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
