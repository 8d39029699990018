package driver

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
)

// TraceEvent is one stage of one run of an asynchronous request.
type TraceEvent struct {
	// Device is the device the request runs on ("CPU").
	Device string
	// Request identifies the request (AsyncInferRequest.ID).
	Request int
	// Run counts the request's runs from 1.
	Run int64
	// Stage is the stage name ("preprocess").
	Stage string
	// Executor is the name of the executor that ran the stage, or "inline"
	// for a synchronous Infer.
	Executor string
	// Start is when the stage began running (after any wait for a stream).
	Start time.Time
	// Duration is how long it ran.
	Duration time.Duration
	// Err is the stage's error, if any.
	Err error
}

// Tracer collects TraceEvents from the requests it is given to (WithTracer)
// and writes them as a Chrome trace. It keeps at most the number of events
// it was made with and counts the rest as dropped. It is safe for
// concurrent use.
type Tracer struct {
	mu      sync.Mutex
	limit   int
	events  []TraceEvent
	dropped int64
}

// DefaultTraceLimit is the number of events NewTracer(0) keeps.
const DefaultTraceLimit = 1 << 20

// NewTracer returns a tracer that keeps up to limit events (limit <= 0:
// DefaultTraceLimit).
func NewTracer(limit int) *Tracer {
	if limit <= 0 {
		limit = DefaultTraceLimit
	}
	return &Tracer{limit: limit}
}

// Record adds an event.
func (t *Tracer) Record(ev TraceEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.events) >= t.limit {
		t.dropped++
		return
	}
	t.events = append(t.events, ev)
}

// Events returns the recorded events sorted by start time.
func (t *Tracer) Events() []TraceEvent {
	t.mu.Lock()
	out := append([]TraceEvent(nil), t.events...)
	t.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Dropped returns how many events did not fit.
func (t *Tracer) Dropped() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// Reset forgets every event (a benchmark calls it after warm-up).
func (t *Tracer) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events, t.dropped = nil, 0
}

// StageSummary is the timing of one stage over a trace.
type StageSummary struct {
	Stage    string
	Executor string
	Count    int
	Mean     time.Duration
	Total    time.Duration
}

// Summary returns per-stage counts and mean times, in the order the stages
// first ran. The slowest stage's mean bounds a pipeline's throughput at
// 1/Mean.
func (t *Tracer) Summary() []StageSummary {
	evs := t.Events()
	idx := map[string]int{}
	var out []StageSummary
	for _, ev := range evs {
		k := ev.Stage + "\x00" + ev.Executor
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, StageSummary{Stage: ev.Stage, Executor: ev.Executor})
		}
		out[i].Count++
		out[i].Total += ev.Duration
	}
	for i := range out {
		out[i].Mean = out[i].Total / time.Duration(out[i].Count)
	}
	return out
}

// ChromeEvent is one entry of the Chrome trace event format
// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
// complete events ("X") with microsecond timestamps, and metadata ("M")
// naming processes and threads.
type ChromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// ChromeTrace is the JSON object chrome://tracing and Perfetto load.
type ChromeTrace struct {
	TraceEvents     []ChromeEvent `json:"traceEvents"`
	DisplayTimeUnit string        `json:"displayTimeUnit"`
}

// ChromeTrace converts the events: one complete event ("ph":"X") per
// stage with ts and dur in microseconds from the first event, pid per
// device (named by a process_name metadata event) and tid per request
// (named "request N"), so overlapping stages of different requests show
// as parallel tracks.
func (t *Tracer) ChromeTrace() ChromeTrace {
	evs := t.Events()
	ct := ChromeTrace{TraceEvents: []ChromeEvent{}, DisplayTimeUnit: "ms"}
	if len(evs) == 0 {
		return ct
	}
	origin := evs[0].Start
	pids := map[string]int{}
	var devices []string
	for _, ev := range evs {
		if _, ok := pids[ev.Device]; !ok {
			pids[ev.Device] = 0
			devices = append(devices, ev.Device)
		}
	}
	sort.Strings(devices)
	for i, d := range devices {
		pids[d] = i + 1
		ct.TraceEvents = append(ct.TraceEvents, ChromeEvent{Name: "process_name", Ph: "M", Pid: i + 1, Args: map[string]any{"name": d}})
	}
	type thread struct{ pid, tid int }
	named := map[thread]bool{}
	for _, ev := range evs {
		th := thread{pids[ev.Device], ev.Request}
		if !named[th] {
			named[th] = true
			ct.TraceEvents = append(ct.TraceEvents, ChromeEvent{Name: "thread_name", Ph: "M", Pid: th.pid, Tid: th.tid, Args: map[string]any{"name": fmt.Sprintf("request %d", ev.Request)}})
		}
	}
	for _, ev := range evs {
		args := map[string]any{"run": ev.Run, "executor": ev.Executor}
		if ev.Err != nil {
			args["error"] = ev.Err.Error()
		}
		ct.TraceEvents = append(ct.TraceEvents, ChromeEvent{
			Name: ev.Stage, Cat: ev.Executor, Ph: "X",
			Ts:  float64(ev.Start.Sub(origin).Nanoseconds()) / 1e3,
			Dur: float64(ev.Duration.Nanoseconds()) / 1e3,
			Pid: pids[ev.Device], Tid: ev.Request, Args: args,
		})
	}
	return ct
}

// WriteChromeTrace writes ChromeTrace as JSON.
func (t *Tracer) WriteChromeTrace(w io.Writer) error {
	enc := json.NewEncoder(w)
	if err := enc.Encode(t.ChromeTrace()); err != nil {
		return fmt.Errorf("plugin: writing chrome trace: %w", err)
	}
	return nil
}
