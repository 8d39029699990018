package driver

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
)

// SetCallback sets the function called once with the run's error (nil on
// success) after each StartAsync's stages have finished; nil removes it.
// It runs on the callback executor, after the request has become idle, so
// it may set tensors and call StartAsync again; Wait returns after it
// returns. A panic in the callback is recovered and Wait returns it as an
// error wrapping ErrCallback. Wait, WaitFor and Close called from the
// callback on its own request would wait for the callback itself: they
// return an error wrapping ErrBusy at once instead.
func (r *AsyncInferRequest) SetCallback(f func(err error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.callback = f
}

// runCallback calls cb on the callback executor (inline without one, or
// once it is closed) and returns its panic as an error.
func (r *AsyncInferRequest) runCallback(cb func(error), runErr error) error {
	call := func(context.Context) (err error) {
		g := r.enterCallback()
		defer r.leaveCallback(g)
		defer func() {
			if p := recover(); p != nil {
				err = errorf(ErrCallback, "plugin: request %d: callback panicked: %v", r.id, p)
			}
		}()
		cb(runErr)
		return nil
	}
	if e := r.opts.execs[ExecutorCallback]; e != nil {
		err := e.Run(context.Background(), call)
		if !errors.Is(err, ErrClosed) || errors.Is(err, ErrCallback) {
			return err
		}
	}
	return call(context.Background())
}

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
