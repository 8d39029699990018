package cpufallback

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/clinfer/clinfer/cpu_fallback/ref"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// Interface checks for the asynchronous machinery.
var (
	_ driver.Stager             = (*InferRequest)(nil)
	_ driver.AsyncCompiledModel = (*CompiledModel)(nil)
)

// deviceFacts are what the CPU tells driver.PlanStreams: one stream per
// core at most, one request per stream.
func deviceFacts() driver.DeviceFacts {
	procs := runtime.GOMAXPROCS(0)
	return driver.DeviceFacts{Cores: procs, MaxStreams: procs, RequestsPerStream: 1}
}

// initAsync sets up the compiled model's asynchronous machinery on the
// plugin's executors, with as many streams as PERFORMANCE_HINT and
// NUM_STREAMS plan (driver.PlanStreams); compile calls it.
func (c *CompiledModel) initAsync(p *Plugin, conf driver.Config) {
	plan := driver.PlanStreams(conf, deviceFacts())
	c.core.Resolve(driver.KeyNumStreams, strconv.Itoa(plan.Streams))
	c.async.Init(&p.executors, driver.PipelineConfig{Device: DeviceName, Streams: plan.Streams},
		fmt.Sprintf("cpu: compiled model %q", c.model.Name))
}

// CreateAsyncInferRequest implements driver.AsyncCompiledModel: a new
// request whose preprocess, infer and postprocess stages run on the CPU
// task executor; callbacks run on the callback executor.
func (c *CompiledModel) CreateAsyncInferRequest(opts ...driver.AsyncOption) (*driver.AsyncInferRequest, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	r, err := newInferRequest(c)
	if err != nil {
		return nil, err
	}
	return c.async.NewRequest(r, opts...)
}

// closeAsync waits for running asynchronous requests and releases the
// executors; later CreateAsyncInferRequest calls fail with ErrClosed.
func (c *CompiledModel) closeAsync() error { return c.async.Close() }

// runState is what the stages of one inference share.
type runState struct {
	inputs, outputs []*tensor.Tensor
	userOut         []bool
	vals            []*tensor.Tensor
	results         []*tensor.Tensor
	prof, opProf    []driver.ProfilingInfo
	seed            *tensor.Tensor // the random ops' request seed (ref.RandomSeedInput)
}

// Stages implements driver.Stager: preprocess (snapshot and bind the
// inputs), infer (run the kernels, checking ctx between ops) and
// postprocess (hand out the outputs and the profile), all on the task
// executor. Run in order they do what Infer does, without marking the
// request busy (the asynchronous request guards it).
func (r *InferRequest) Stages() []driver.Stage {
	s := &runState{}
	return []driver.Stage{
		{Name: "preprocess", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.preprocess(ctx, s) }},
		{Name: "infer", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.execute(ctx, s) }},
		{Name: "postprocess", Executor: driver.ExecutorTask, Run: func(ctx context.Context) error { return r.postprocess(ctx, s) }},
	}
}

// stageProf records a stage's time when profiling is on.
func (r *InferRequest) stageProf(s *runState, name string, t0 time.Time) {
	if r.c.profiling {
		d := time.Since(t0)
		s.prof = append(s.prof, driver.ProfilingInfo{NodeName: name, NodeType: "Stage", ExecType: "go", Status: driver.Executed, RealTime: d, CPUTime: d})
	}
}

func (r *InferRequest) preprocess(ctx context.Context, s *runState) error {
	c := r.c
	t0 := time.Now()
	var err error
	if s.inputs, s.outputs, s.userOut, err = r.core.Begin(ctx, c.model.Name, c.check, nil); err != nil {
		return err
	}
	if err := c.peakFor(s.inputs); err != nil {
		return err
	}
	s.seed = ref.RandomSeedInput(driver.RequestSeed(ctx, c.core.Props()))
	s.vals = make([]*tensor.Tensor, c.numSlots)
	for slot, v := range c.consts {
		s.vals[slot] = v
	}
	for i, t := range s.inputs { // Begin checked that every input has one
		s.vals[c.paramSlot[i]] = t.Contiguous()
	}
	r.stageProf(s, "preprocess", t0)
	return nil
}

func (r *InferRequest) execute(ctx context.Context, s *runState) error {
	c := r.c
	t0 := time.Now()
	// The live bytes against MAX_HOST_MEMORY: constants and inputs first,
	// then each kernel's outputs, minus the values the plan frees.
	live := c.constBytes
	for _, t := range s.inputs {
		live += t.ByteSize()
	}
	for si := range c.steps {
		st := &c.steps[si]
		if st.k != nil {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("cpu: infer %q: stopped before node %q: %w", c.model.Name, st.node.Name, err)
			}
			ts := time.Now()
			if err := runStep(st, s.vals, s.seed); err != nil {
				return stepError(c.model.Name, st, err)
			}
			for _, slot := range st.out {
				if v := s.vals[slot]; v != nil {
					live += v.ByteSize()
					if live > c.maxHost {
						for _, o := range st.out {
							s.vals[o] = nil
						}
						return exhausted(c.model.Name, st.node, v.Shape(), v.Type(), v.ByteSize(), live, c.maxHost)
					}
				}
			}
			if c.profiling {
				d := time.Since(ts)
				s.opProf = append(s.opProf, driver.ProfilingInfo{NodeName: st.node.Name, NodeType: st.node.OpType, ExecType: st.impl, Status: driver.Executed, RealTime: d, CPUTime: d})
			}
		}
		if st.node.OpType == graph.OpResult {
			continue // results keep their value alive
		}
		for _, slot := range st.free {
			if !isResultInput(c, slot) {
				if v := s.vals[slot]; v != nil && c.consts[slot] == nil {
					live -= v.ByteSize()
				}
				s.vals[slot] = nil
			}
		}
	}
	r.stageProf(s, "infer", t0)
	return nil
}

func (r *InferRequest) postprocess(ctx context.Context, s *runState) error {
	c := r.c
	t0 := time.Now()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cpu: infer %q: %w", c.model.Name, err)
	}
	s.results = make([]*tensor.Tensor, len(c.resultIn))
	seen := map[*tensor.Tensor]bool{}
	for i, slot := range c.resultIn {
		v := s.vals[slot]
		if v == nil {
			return driver.Errorf(driver.ErrDevice, "cpu: infer %q: output %q was not computed", c.model.Name, c.core.Output(i).Name)
		}
		if s.userOut[i] {
			dst := s.outputs[i]
			if !dst.Shape().Equal(v.Shape()) || dst.Type() != v.Type() {
				return driver.Errorf(driver.ErrInvalidArgument, "cpu: infer %q: output %q is %v but the bound tensor is %v", c.model.Name, c.core.Output(i).Name, v, dst)
			}
			if err := dst.CopyFrom(v); err != nil {
				return driver.Errorf(driver.ErrInvalidArgument, "cpu: infer %q: output %q: %w", c.model.Name, c.core.Output(i).Name, err)
			}
			s.results[i] = dst
			continue
		}
		if seen[v] || aliasesModel(c, v, s.inputs) || !v.IsContiguous() {
			v = v.Clone()
		}
		seen[v] = true
		s.results[i] = v
	}
	s.vals = nil
	r.stageProf(s, "postprocess", t0)
	var prof []driver.ProfilingInfo
	if c.profiling {
		prof = append(s.opProf, s.prof...)
	}
	r.core.Mu.Lock()
	defer r.core.Mu.Unlock()
	r.core.IO.Publish(s.results)
	r.core.Prof = prof
	if c.profiling {
		c.core.RecordPerf(prof)
	}
	return nil
}
