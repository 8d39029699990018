package clbackend

import (
	"errors"
	"fmt"
	"sync"
)

// background is the work a compiled model does after CompileModel has
// returned it, beside its first inferences: the program binaries taken
// after the warm-up (CACHE_MODE=OPTIMIZE_SPEED, which POCL makes by
// compiling every kernel once more: ~10 s of IS-Net medium's 26 s first
// compile with an empty CACHE_DIR) and the model cache's blob the Core
// writes (driver.BackgroundRunner). Tasks run one after another on their
// own goroutine, in the order given; an error is reported on stderr when
// it happens and returned by Close, which waits for every task before it
// releases what they read.
type background struct {
	mu   sync.Mutex
	last chan struct{} // closed when the latest task has ended
	errs []error
}

// run starts f after the tasks already given; name says what it does in
// its error.
func (b *background) run(name string, f func() error) {
	b.mu.Lock()
	prev := b.last
	done := make(chan struct{})
	b.last = done
	b.mu.Unlock()
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		if err := runTask(f); err != nil {
			err = fmt.Errorf("gpu: %s: %w", name, err)
			warnf("%v", err)
			b.mu.Lock()
			b.errs = append(b.errs, err)
			b.mu.Unlock()
		}
	}()
}

// runTask runs f, turning a panic into an error: a task runs on its own
// goroutine, where a panic would end the process.
func runTask(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// wait waits for every task given so far and returns their errors.
func (b *background) wait() error {
	b.mu.Lock()
	last := b.last
	b.mu.Unlock()
	if last != nil {
		<-last
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return errors.Join(b.errs...)
}

// Background implements driver.BackgroundRunner: f (the model cache's
// blob) runs after the model's earlier background work, and Close waits
// for it.
func (c *CompiledModel) Background(name string, f func() error) { c.bg.run(name, f) }
