package clbackend

// A synchronous Infer runs the stages a request made once (InferRequest.sync),
// over one runState that each inference resets and refills: its slices
// keep their memory from one inference to the next, so a request running
// inference after inference allocates nothing for its run state, its
// snapshot of the bindings or its stages (what it still allocates: the
// output tensors it makes where the user bound none, and the event of the
// last command). Busy serialises Infer, so one runState serves them all;
// the asynchronous request takes fresh ones from Stages for each run.

// reset readies s, the run state of an earlier inference, for the next
// one, keeping its slices' memory; the snapshot of the bindings (inputs,
// outputs, userOut, snapIn, snapOut) is the caller's, just taken. The
// earlier inference's events were closed (postprocess, drain): reset
// only forgets them.
func (s *runState) reset() {
	s.land() // a run left in flight was drained before (preprocess)
	*s = runState{
		inputs: s.inputs, outputs: s.outputs, userOut: s.userOut, snapIn: s.snapIn, snapOut: s.snapOut,
		remoteIn: cleared(s.remoteIn), remoteOut: cleared(s.remoteOut), remotes: cleared(s.remotes),
		segs: cleared(s.segs), ran: cleared(s.ran), hostIn: cleared(s.hostIn), seed: s.seed[:0],
		staged: cleared(s.staged), unstage: cleared(s.unstage), cpu: cleared(s.cpu),
		evs: events{upload: cleared(s.evs.upload), download: cleared(s.evs.download), kernels: cleared(s.evs.kernels), copies: cleared(s.evs.copies)},
	}
}

// forget drops s's references to the user's tensors once its inference
// is over (published or drained): the inputs, the bound outputs, their
// contiguous forms, the download targets and the remote tensors, so that
// a request keeps no memory of the caller's alive between inferences
// beyond its own bindings; the slices keep their memory.
func (s *runState) forget() {
	s.inputs, s.outputs, s.hostIn, s.staged = cleared(s.inputs), cleared(s.outputs), cleared(s.hostIn), cleared(s.staged)
	s.snapIn, s.snapOut = cleared(s.snapIn), cleared(s.snapOut)
	s.remoteIn, s.remoteOut, s.remotes = cleared(s.remoteIn), cleared(s.remoteOut), cleared(s.remotes)
}

// cleared is v emptied, its elements zeroed (no pointer of an earlier
// inference kept alive), its memory kept.
func cleared[T any](v []T) []T {
	clear(v)
	return v[:0]
}

// resized is v with n zero elements, in v's memory when it has room.
func resized[T any](v []T, n int) []T {
	if cap(v) < n {
		return make([]T, n)
	}
	v = v[:n]
	clear(v)
	return v
}
