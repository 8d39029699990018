package devicetest

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clinfer/clinfer/plugin/driver"
)

// CloseRounds is the number of rounds CloseDuringInfer runs.
const CloseRounds = 50

// CloseDuringInfer closes compiled models and requests while other
// goroutines run inferences on them, CloseRounds times: every round
// compiles the test model, starts goroutines that infer on requests of
// their own (synchronous and asynchronous) until they fail, closes one
// request while its goroutine infers and then the compiled model while
// the others do. Every call either runs or fails with ErrClosed (ErrBusy
// for a Close of a running request), nothing crashes inside the driver
// (HETERO runs its GPU subgraphs' stages itself, so the GPU model must
// not release what they use), and closing the requests afterwards
// succeeds.
func CloseDuringInfer(t *testing.T, newPlugin NewPlugin) {
	p := open(t, newPlugin)
	ctx := context.Background()
	const syncWorkers = 3
	for round := range CloseRounds {
		cm, _ := compile(t, p, nil)
		var wg sync.WaitGroup
		var started sync.WaitGroup
		errs := make(chan error, syncWorkers+2)
		var reqs []driver.InferRequest
		// loop infers with infer until it fails, reporting the error and
		// marking started after the first call.
		loop := func(infer func() error) {
			wg.Add(1)
			started.Add(1)
			go func() { // exits once infer fails (Close)
				defer wg.Done()
				first := true
				for {
					err := infer()
					if first {
						started.Done()
						first = false
					}
					if err != nil {
						errs <- err
						return
					}
					// Let the closing goroutine run on a busy machine.
					runtime.Gosched()
				}
			}()
		}
		for range syncWorkers {
			r, err := cm.CreateInferRequest()
			require.NoError(t, err, "round %d", round)
			require.NoError(t, r.SetTensor(InputName, loadInput(60+round)))
			reqs = append(reqs, r)
			loop(func() error { return r.Infer(ctx) })
		}
		ar, err := driver.CreateAsyncInferRequest(cm)
		require.NoError(t, err, "round %d", round)
		require.NoError(t, ar.SetTensor(InputName, loadInput(60+round)))
		reqs = append(reqs, ar)
		loop(func() error {
			if err := ar.StartAsync(ctx); err != nil {
				return err
			}
			return ar.Wait(ctx)
		})
		// An asynchronous request's Infer runs its stages on the caller's
		// goroutine: the compiled model's Close must wait for it too.
		ai, err := driver.CreateAsyncInferRequest(cm)
		require.NoError(t, err, "round %d", round)
		require.NoError(t, ai.SetTensor(InputName, loadInput(60+round)))
		reqs = append(reqs, ai)
		loop(func() error { return ai.Infer(ctx) })
		started.Wait()

		// A synchronous request and an asynchronous one's Infer are closed
		// while their goroutines infer: Close is ErrBusy while an Infer
		// runs, or succeeds between two (and the goroutine's next Infer is
		// ErrClosed).
		for _, r := range []driver.InferRequest{reqs[0], ai} {
			if err := r.Close(); err != nil {
				require.ErrorIs(t, err, driver.ErrBusy, "round %d: closing a request while it infers", round)
			}
		}
		require.NoError(t, cm.Close(), "round %d: closing the compiled model while its requests infer", round)
		wg.Wait()
		close(errs)
		for err := range errs {
			assert.ErrorIs(t, err, driver.ErrClosed, "round %d: an inference running into Close", round)
		}
		for i, r := range reqs {
			assert.NoError(t, r.Close(), "round %d: closing request %d after the compiled model", round, i)
		}
		if t.Failed() {
			return
		}
	}
}
