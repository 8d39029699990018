package serve

// Hooks for the external tests: they hold places in a model's queue as
// requests in flight would.

// QueueCaps returns the capacity of the newest version's queue (queued
// and running) and of its pool of running requests.
func QueueCaps(s *Server, model string) (admit, exec int) {
	v, err := s.acquire(model, "")
	if err != nil {
		panic(err)
	}
	defer v.release()
	return cap(v.admit), cap(v.exec)
}

// Hold takes n places of the queue (admit) or of the pool (exec) of the
// newest version; Release gives them back.
func Hold(s *Server, model string, admit, exec int) (release func()) {
	v, err := s.acquire(model, "")
	if err != nil {
		panic(err)
	}
	for range admit {
		v.admit <- struct{}{}
	}
	for range exec {
		v.exec <- struct{}{}
	}
	return func() {
		for range admit {
			<-v.admit
		}
		for range exec {
			<-v.exec
		}
		v.release()
	}
}

// Pending is how many requests are queued or running on the newest
// version.
func Pending(s *Server, model string) int {
	v, err := s.acquire(model, "")
	if err != nil {
		panic(err)
	}
	defer v.release()
	return len(v.admit)
}

// Outcomes sums clinfer_inference_requests_total for an outcome.
func Outcomes(s *Server, outcome string) float64 {
	mfs, err := s.opts.Gatherer.Gather()
	if err != nil {
		panic(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "clinfer_inference_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}
