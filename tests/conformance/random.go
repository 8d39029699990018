package conformance

import (
	"fmt"
	"math"

	"github.com/clinfer/clinfer/tensor"
)

// RandomCheck checks the outputs got of one data set of a case whose
// outputs are random draws, given the data set's inputs and its recorded
// outputs want (one draw of numpy's generator).
type RandomCheck func(inputs, got, want []*tensor.Tensor) error

// RandomOutputs are the backend-suite cases whose outputs are random: ONNX
// recorded one draw of numpy's Mersenne Twister, which clinfer's Philox
// generator (the same on every device, see internal/philox) does not
// reproduce, and ONNX Runtime leaves these cases out of its runs. The
// runner checks what the op defines instead of the values: each output's
// type and shape are the recorded ones, Bernoulli draws are 0 or 1 (and
// certain where the probability is 0 or 1), and training-mode Dropout
// keeps each element scaled by 1/(1-ratio) or zeroes it, with a mask that
// agrees and a kept share within 5 standard deviations of 1-ratio.
var RandomOutputs = map[string]RandomCheck{
	"node/test_bernoulli":                        checkBernoulli,
	"node/test_bernoulli_expanded":               checkBernoulli,
	"node/test_bernoulli_double":                 checkBernoulli,
	"node/test_bernoulli_double_expanded":        checkBernoulli,
	"node/test_bernoulli_seed":                   checkBernoulli,
	"node/test_bernoulli_seed_expanded":          checkBernoulli,
	"node/test_training_dropout":                 checkTrainingDropout,
	"node/test_training_dropout_default":         checkTrainingDropout,
	"node/test_training_dropout_default_mask":    checkTrainingDropout,
	"node/test_training_dropout_mask":            checkTrainingDropout,
	"node/test_training_dropout_zero_ratio":      checkTrainingDropout,
	"node/test_training_dropout_zero_ratio_mask": checkTrainingDropout,
}

// sameForm checks that got has want's kinds, types and shapes.
func sameForm(got, want []*tensor.Tensor) error {
	if len(got) != len(want) {
		return fmt.Errorf("%w: %d outputs, want %d", ErrMismatch, len(got), len(want))
	}
	for i := range want {
		if got[i] == nil || got[i].Type() != want[i].Type() || !got[i].Shape().Equal(want[i].Shape()) {
			return fmt.Errorf("%w: output %d is %v, want %v", ErrMismatch, i, got[i], want[i])
		}
	}
	return nil
}

func checkBernoulli(inputs, got, want []*tensor.Tensor) error {
	if err := sameForm(got, want); err != nil {
		return err
	}
	p, y := inputs[0].Float64s(), got[0].Float64s()
	for i, v := range y {
		switch {
		case v != 0 && v != 1:
			return fmt.Errorf("%w: element %d is %v, not 0 or 1", ErrMismatch, i, v)
		case p[i] <= 0 && v != 0, p[i] >= 1 && v != 1:
			return fmt.Errorf("%w: element %d is %v with probability %v", ErrMismatch, i, v, p[i])
		}
	}
	return nil
}

func checkTrainingDropout(inputs, got, want []*tensor.Tensor) error {
	if err := sameForm(got, want); err != nil {
		return err
	}
	ratio := 0.5
	if len(inputs) > 1 {
		ratio = inputs[1].Float64s()[0]
	}
	x, y := inputs[0].Float64s(), got[0].Float64s()
	var mask []bool
	if len(got) > 1 {
		mask = got[1].Contiguous().Bool()
	}
	scale := 1 / (1 - ratio)
	kept := 0
	for i := range y {
		keep := math.Abs(y[i]-x[i]*scale) <= 1e-5+1e-5*math.Abs(x[i]*scale)
		if !keep && y[i] != 0 {
			return fmt.Errorf("%w: element %d is %v, neither 0 nor %v/(1-%v)", ErrMismatch, i, y[i], x[i], ratio)
		}
		if keep && x[i] != 0 || y[i] != 0 {
			kept++
		}
		if mask != nil && x[i] != 0 && mask[i] != keep {
			return fmt.Errorf("%w: mask element %d is %v but the element was %s", ErrMismatch, i, mask[i], map[bool]string{true: "kept", false: "dropped"}[keep])
		}
	}
	n := float64(len(y))
	sd := math.Sqrt(n * ratio * (1 - ratio))
	if math.Abs(float64(kept)-n*(1-ratio)) > 5*sd+1 {
		return fmt.Errorf("%w: %d of %d elements kept with ratio %v", ErrMismatch, kept, len(y), ratio)
	}
	return nil
}
