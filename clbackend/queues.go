package clbackend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
)

// The command queues of requests: made by the request (in-order, with the
// GPU_QUEUE_PRIORITY and GPU_QUEUE_THROTTLE hints), or the user's
// OCL_QUEUE of a user context, which every request of the context shares.

// hintLevels are the values of GPU_QUEUE_PRIORITY and GPU_QUEUE_THROTTLE;
// MEDIUM, the default, passes no hint (the driver's own default).
var hintLevels = []string{"LOW", "MEDIUM", "HIGH"}

// hintSpec is GPU_QUEUE_PRIORITY or GPU_QUEUE_THROTTLE on device d: LOW
// and HIGH need the extension, and asking for them on a device without it
// (POCL) names the device and the extension.
func hintSpec(d *device, key, ext string) driver.PropertySpec {
	return driver.PropertySpec{
		Key: key, Mutable: true, Default: "MEDIUM",
		Accepted: strings.Join(hintLevels, ", ") + " (LOW and HIGH need " + ext + ")",
		Parse: func(s string) (string, error) {
			v := strings.ToUpper(strings.TrimSpace(s))
			switch v {
			case "MEDIUM":
				return v, nil
			case "LOW", "HIGH":
				if !d.hasExtension(ext) {
					return "", fmt.Errorf("device %s (%s) lacks the OpenCL extension %s that %s=%s needs; leave it MEDIUM (the driver's default)", d.name(), d.fullName, ext, key, v)
				}
				return v, nil
			}
			return "", errors.New("not a level")
		},
	}
}

// hostTaskPrioritySpec is GPU_HOST_TASK_PRIORITY, which OpenVINO uses for
// the priority (and core type) of its host threads. Goroutines have no
// priorities: MEDIUM, what they run at, is accepted so that OpenVINO
// configurations load, and LOW or HIGH is an error saying so.
func hostTaskPrioritySpec() driver.PropertySpec {
	return driver.PropertySpec{
		Key: driver.KeyHostTaskPriority, Mutable: true, Default: "MEDIUM",
		Accepted: "MEDIUM",
		Parse: func(s string) (string, error) {
			v := strings.ToUpper(strings.TrimSpace(s))
			switch v {
			case "MEDIUM":
				return v, nil
			case "LOW", "HIGH":
				return "", errors.New("goroutines have no priorities, so clinfer's host work runs at the process's priority; run the process with nice(1) or its scheduling policy set instead")
			}
			return "", errors.New("not a level")
		},
	}
}

// memorySpecs are the device's memory properties: GPU_MEMORY_STATISTICS of
// all its contexts.
func memorySpec(d *device) driver.PropertySpec {
	return driver.ComputedSpec(driver.KeyMemoryStatistics, func() (string, error) {
		return d.memoryStats().String(), nil
	})
}

// hasExtension reports whether the device lists an OpenCL extension.
func (d *device) hasExtension(ext string) bool {
	ok, err := d.cl.HasExtension(ext)
	return err == nil && ok
}

// queueHints reads the queue hints of a configuration.
func queueHints(cfg *driver.Properties) (cl.QueueHints, error) {
	var h cl.QueueHints
	prio, err := cfg.Get(driver.KeyQueuePriority)
	if err != nil {
		return h, err
	}
	thr, err := cfg.Get(driver.KeyQueueThrottle)
	if err != nil {
		return h, err
	}
	h.Priority = map[string]cl.QueuePriority{"LOW": cl.QueuePriorityLow, "HIGH": cl.QueuePriorityHigh}[prio]
	h.Throttle = map[string]cl.QueueThrottle{"LOW": cl.QueueThrottleLow, "HIGH": cl.QueueThrottleHigh}[thr]
	return h, nil
}

// checkContext checks the configuration against the context the model
// compiles in: a user queue must have profiling on for ENABLE_PROFILING,
// and takes no queue hints (they are the user's to set when making it).
func (c *CompiledModel) checkContext(cfg *driver.Properties) error {
	var err error
	if c.hints, err = queueHints(cfg); err != nil {
		return fmt.Errorf("gpu: compile: %w", err)
	}
	q := c.ctx.queue
	if q == nil {
		return nil
	}
	if c.hints != (cl.QueueHints{}) {
		return driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q in %s: %s and %s apply to queues clinfer makes, and the context runs on your OCL_QUEUE; make that queue with the hints instead", c.model.Name, c.ctx.describe(), driver.KeyQueuePriority, driver.KeyQueueThrottle)
	}
	conf, err := driver.ParseConfig(cfg)
	if err != nil {
		return fmt.Errorf("gpu: compile: %w", err)
	}
	if conf.EnableProfiling && q.Properties()&cl.CommandQueueProfilingEnable == 0 {
		return driver.Errorf(driver.ErrInvalidArgument, "gpu: compile model %q in %s: %s=YES needs event timestamps, and the context's OCL_QUEUE was made without CL_QUEUE_PROFILING_ENABLE", c.model.Name, c.ctx.describe(), driver.KeyEnableProfiling)
	}
	return nil
}

// newQueue returns a request's queue: the context's user queue (shared,
// not the request's to release) or a new in-order one with the model's
// hints.
func (c *CompiledModel) newQueue() (q *cl.CommandQueue, own bool, err error) {
	if c.ctx.queue != nil {
		return c.ctx.queue, false, nil
	}
	var props cl.CommandQueueProperty
	if c.profiling {
		props |= cl.CommandQueueProfilingEnable
	}
	q, err = c.ctx.cl.CreateCommandQueueWithHints(c.run.cl, props, c.hints)
	return q, true, err
}
