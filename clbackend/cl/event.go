package cl

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// Event is the OpenCL event of an enqueued command or a user event.
type Event struct {
	r ref
	// statusSet records that SetUserEventStatus succeeded: the binding
	// enforces the spec's set-once rule itself because NVIDIA's driver
	// accepts a second status.
	statusSet atomic.Bool
}

func newEvent(h handle) *Event {
	if h == nil {
		return nil
	}
	e := &Event{}
	track(e, &e.r, kindEvent, h)
	return e
}

func (e *Event) h() handle {
	if e == nil {
		return nil
	}
	return e.r.handle()
}

// Close releases the event. It is idempotent and returns the status of
// clReleaseEvent; the command itself is not affected.
func (e *Event) Close() error {
	if e == nil {
		return nil
	}
	return e.r.close()
}

// Wait blocks until the event's command has completed. If the command, or
// one it waited for, terminated abnormally the error matches
// ErrExecStatusErrorForEventsInWaitList.
func (e *Event) Wait() error { return e.WaitSpin(0) }

// WaitSpin is Wait that first polls the command's execution status for up
// to spin, yielding the processor between polls, and blocks only when the
// command is still running then. A small model's inference ends within
// tens of microseconds, less than a blocking wait takes to put the thread
// to sleep and wake it again; the poll burns at most spin of one core's
// time per wait. The caller must have flushed the command's queue (a
// poll, unlike clWaitForEvents, does not).
func (e *Event) WaitSpin(spin time.Duration) error {
	_, err := e.WaitSpinAlone(spin, nil)
	return err
}

// WaitSpinAlone is WaitSpin that polls only while busy (when not nil) is
// at most 1: busy counts the waits in flight that the caller keeps, this
// one included, and the poll stops and the wait blocks as soon as another
// joins (or at once if one has), so that concurrent waits do not each
// take a core from the work they wait for. It reports whether the wait
// ended blocking in clWaitForEvents.
func (e *Event) WaitSpinAlone(spin time.Duration, busy *atomic.Int32) (blocked bool, err error) {
	h := e.h()
	if h == nil {
		return false, closedError("clWaitForEvents", ErrInvalidEvent)
	}
	st, blocked, err := waitEvent(h, spin, busy)
	runtime.KeepAlive(e)
	if err == nil && st < 0 {
		err = &Error{Op: "clWaitForEvents", Code: ErrExecStatusErrorForEventsInWaitList}
	}
	return blocked, err
}

// terminated returns CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST when one
// of events (all complete or terminated) has a negative status. The spec
// has clWaitForEvents return that error itself, but not every driver does
// (NVIDIA's returns CL_SUCCESS for a user event set to an error status), so
// the binding checks: a terminated command is an error on every driver.
func terminated(events []*Event) error {
	for _, e := range events {
		if e == nil {
			continue
		}
		if s, err := e.Status(); err == nil && s < 0 {
			return &Error{Op: "clWaitForEvents", Code: ErrExecStatusErrorForEventsInWaitList}
		}
	}
	return nil
}

// WaitContext is Wait that returns ctx.Err() when ctx is done first. The
// command is not cancelled: OpenCL cannot abort it, and it keeps running.
// It learns of completion from an event callback and, because not every
// implementation calls back for commands that terminate abnormally, also
// polls the event's status at a slowly growing interval.
func (e *Event) WaitContext(ctx context.Context) error {
	if ctx.Done() == nil {
		return e.Wait()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan CommandExecStatus, 1) // the callback must never block
	if err := e.SetCallback(CommandExecStatusComplete, func(s CommandExecStatus) { done <- s }); err != nil {
		return err
	}
	poll := time.Millisecond
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		select {
		case s := <-done:
			if s >= 0 {
				// Some implementations report CL_COMPLETE for a
				// terminated command: trust the status instead.
				var err error
				if s, err = e.Status(); err != nil {
					return err
				}
			}
			if s < 0 {
				return &Error{Op: "clWaitForEvents", Code: ErrExecStatusErrorForEventsInWaitList}
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			s, err := e.Status()
			if err != nil {
				return err
			}
			if s < 0 {
				return &Error{Op: "clWaitForEvents", Code: ErrExecStatusErrorForEventsInWaitList}
			}
			if s == CommandExecStatusComplete {
				return nil
			}
			poll = min(2*poll, 100*time.Millisecond)
			timer.Reset(poll)
		}
	}
}

// WaitForEvents blocks until every event in events has completed (nil
// entries are skipped).
func WaitForEvents(events []*Event) error {
	const op = "clWaitForEvents"
	hs, err := waitList(op, events)
	if err != nil {
		return err
	}
	if len(hs) == 0 {
		return nil
	}
	err = waitForEvents(hs)
	if err == nil {
		err = terminated(events)
	}
	runtime.KeepAlive(events)
	return err
}

// Status returns CL_EVENT_COMMAND_EXECUTION_STATUS; a negative status is the
// error code of a command that terminated abnormally.
func (e *Event) Status() (CommandExecStatus, error) {
	v, err := uintInfo(e.info(eventCommandExecutionStatus, "CL_EVENT_COMMAND_EXECUTION_STATUS"))
	return CommandExecStatus(int32(uint32(v))), err
}

// CommandType returns CL_EVENT_COMMAND_TYPE.
func (e *Event) CommandType() (CommandType, error) {
	v, err := uintInfo(e.info(eventCommandType, "CL_EVENT_COMMAND_TYPE"))
	return CommandType(v), err
}

func (e *Event) info(param uint32, name string) ([]byte, error) {
	h := e.h()
	if h == nil {
		return nil, closedError("clGetEventInfo("+name+")", ErrInvalidEvent)
	}
	b, err := getEventInfo(h, param, name)
	runtime.KeepAlive(e)
	return b, err
}

// GetEventProfilingInfo returns a timestamp of the event's command in device
// nanoseconds. The queue must have been created with
// CommandQueueProfilingEnable and the command must have completed, or the
// error matches ErrProfilingInfoNotAvailable.
func (e *Event) GetEventProfilingInfo(paramName ProfilingInfo) (int64, error) {
	h := e.h()
	if h == nil {
		return 0, closedError("clGetEventProfilingInfo", ErrInvalidEvent)
	}
	v, err := getEventProfilingInfo(h, paramName)
	runtime.KeepAlive(e)
	return int64(v), err
}

// Profile holds the four timestamps of a command, in device nanoseconds.
type Profile struct {
	Queued, Submit, Start, End int64
}

// Duration returns how long the command ran on the device (End-Start).
func (p Profile) Duration() time.Duration { return time.Duration(p.End - p.Start) }

// Profile returns all timestamps of the event's command; see
// GetEventProfilingInfo.
func (e *Event) Profile() (Profile, error) {
	var p Profile
	var err error
	for _, f := range []struct {
		dst   *int64
		param ProfilingInfo
	}{
		{&p.Queued, ProfilingInfoCommandQueued},
		{&p.Submit, ProfilingInfoCommandSubmit},
		{&p.Start, ProfilingInfoCommandStart},
		{&p.End, ProfilingInfoCommandEnd},
	} {
		if *f.dst, err = e.GetEventProfilingInfo(f.param); err != nil {
			return p, err
		}
	}
	return p, nil
}

// SetCallback arranges for fn to be called once the event's command reaches
// status (CommandExecStatusSubmitted, Running or Complete) or terminates
// abnormally, in which case fn gets the negative error status. fn runs on
// a thread of the OpenCL implementation: it must return quickly and must not
// call blocking OpenCL functions such as Wait or Finish; hand work off to a
// channel instead. A panic in fn crashes the program.
func (e *Event) SetCallback(status CommandExecStatus, fn func(status CommandExecStatus)) error {
	const op = "clSetEventCallback"
	h := e.h()
	if h == nil {
		return closedError(op, ErrInvalidEvent)
	}
	if fn == nil {
		return &Error{Op: op, Code: ErrInvalidValue}
	}
	err := setEventCallback(h, int32(status), func(s int32) { fn(CommandExecStatus(s)) })
	runtime.KeepAlive(e)
	return err
}

// SetUserEventStatus sets the status of a user event created by
// Context.CreateUserEvent: CommandExecStatusComplete releases the commands
// waiting on it; a negative status makes them terminate with an error. It
// can be set once.
func (e *Event) SetUserEventStatus(status CommandExecStatus) error {
	const op = "clSetUserEventStatus"
	h := e.h()
	if h == nil {
		return closedError(op, ErrInvalidEvent)
	}
	if e.statusSet.Load() {
		return &Error{Op: op, Code: ErrInvalidOperation}
	}
	err := setUserEventStatus(h, int32(status))
	runtime.KeepAlive(e)
	if err == nil {
		e.statusSet.Store(true)
	}
	return err
}
