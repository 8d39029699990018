package ref

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// number is every element type the arithmetic kernels compute on directly.
// f16 and bf16 are widened to float32 first.
type number interface {
	~float32 | ~float64 | ~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~int64 | ~uint32 | ~uint64
}

// sized are the unsigned types used to move elements of 1, 2, 4 or 8 bytes
// without caring what they mean (data-movement kernels are type-generic).
type sized interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

// view reinterprets the bytes of a contiguous tensor as a []T sharing
// memory. Tensor storage is 8-byte aligned, so any T of the element size is
// properly aligned.
func view[T any](x *tensor.Tensor) []T { return bytesAs[T](x.Bytes()) }

// bytesAs reinterprets b as a []T (len(b) must be a multiple of T's size).
func bytesAs[T any](b []byte) []T {
	var z T
	sz := int(unsafe.Sizeof(z))
	if len(b) < sz {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/sz)
}

// opt returns in[i], or nil when the optional input is omitted.
func opt(in []*tensor.Tensor, i int) *tensor.Tensor {
	if i < 0 || i >= len(in) {
		return nil
	}
	return in[i]
}

// need returns in[i] or an error naming the node when it is missing.
func need(n *graph.Node, in []*tensor.Tensor, i int) (*tensor.Tensor, error) {
	if x := opt(in, i); x != nil {
		return x, nil
	}
	return nil, n.Errorf("%w: input %d is required", driver.ErrInvalidArgument, i)
}

// guard makes a kernel safe to call: non-contiguous inputs are made dense
// and a panic inside the kernel (a bug) becomes an error naming the node
// instead of crossing the package boundary.
func guard(k Kernel) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) (out []*tensor.Tensor, err error) {
		defer func() {
			if r := recover(); r != nil {
				out, err = nil, n.Errorf("%w: cpu kernel panicked: %v", driver.ErrDevice, r)
			}
		}()
		for i, x := range in {
			if x != nil && !x.IsContiguous() {
				c := make([]*tensor.Tensor, len(in))
				copy(c, in)
				for j := i; j < len(c); j++ {
					if c[j] != nil {
						c[j] = c[j].Contiguous()
					}
				}
				in = c
				break
			}
		}
		return k(n, in)
	}
}

// guardAll wraps every kernel of a family with guard.
func guardAll(m map[string]Kernel) map[string]Kernel {
	for name, k := range m {
		m[name] = guard(k)
	}
	return m
}

// one wraps a single output in the slice kernels return.
func one(x *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x} }

// newOut allocates an output tensor, turning a bad shape into an error that
// names the node.
func newOut(n *graph.Node, t tensor.ElementType, shape tensor.Shape) (*tensor.Tensor, error) {
	x, err := tensor.New(t, shape)
	if err != nil {
		return nil, n.Errorf("output %v%v: %w", t, shape, err)
	}
	return x, nil
}

// toF32 returns the elements of a float tensor as float32: shared memory for
// f32, a widened copy for f16, bf16 and the 8-bit floats.
func toF32(x *tensor.Tensor) []float32 {
	switch x.Type() {
	case tensor.F32:
		return x.F32()
	case tensor.F16:
		src := x.F16()
		out := make([]float32, len(src))
		for i, v := range src {
			out[i] = tensor.F16ToFloat32(v)
		}
		return out
	case tensor.BF16:
		src := x.BF16()
		out := make([]float32, len(src))
		for i, v := range src {
			out[i] = tensor.BF16ToFloat32(v)
		}
		return out
	case tensor.F8E4M3FN, tensor.F8E4M3FNUZ, tensor.F8E5M2, tensor.F8E5M2FNUZ:
		src := x.Bytes()
		out := make([]float32, len(src))
		for i, v := range src {
			out[i] = tensor.Float8ToFloat32(x.Type(), v)
		}
		return out
	}
	panic(fmt.Sprintf("cpufallback: toF32 on %v", x.Type()))
}

// storeF32 writes float32 values into a float tensor of type t (rounding to
// nearest even for f16/bf16).
func storeF32(dst *tensor.Tensor, v []float32) {
	switch dst.Type() {
	case tensor.F32:
		copy(dst.F32(), v)
	case tensor.F16:
		d := dst.F16()
		for i, f := range v {
			d[i] = tensor.Float32ToF16(f)
		}
	case tensor.BF16:
		d := dst.BF16()
		for i, f := range v {
			d[i] = tensor.Float32ToBF16(f)
		}
	case tensor.F8E4M3FN, tensor.F8E4M3FNUZ, tensor.F8E5M2, tensor.F8E5M2FNUZ:
		d := dst.Bytes()
		for i, f := range v {
			d[i] = tensor.Float32ToFloat8(dst.Type(), f, true) // Cast's default saturate
		}
	default:
		panic(fmt.Sprintf("cpufallback: storeF32 on %v", dst.Type()))
	}
}

// isHalf reports whether t is computed by widening to float32.
func isHalf(t tensor.ElementType) bool { return t == tensor.F16 || t == tensor.BF16 }

func convSlice[S, D number](src []S) []D {
	out := make([]D, len(src))
	for i, v := range src {
		out[i] = D(v)
	}
	return out
}

// toF64s returns a float64 copy of any numeric or boolean tensor.
func toF64s(x *tensor.Tensor) []float64 {
	switch x.Type() {
	case tensor.F32:
		return convSlice[float32, float64](x.F32())
	case tensor.F64:
		return append([]float64(nil), x.F64()...)
	case tensor.F16, tensor.BF16, tensor.F8E4M3FN, tensor.F8E4M3FNUZ, tensor.F8E5M2, tensor.F8E5M2FNUZ:
		return convSlice[float32, float64](toF32(x))
	case tensor.I8:
		return convSlice[int8, float64](x.I8())
	case tensor.U8, tensor.Bool:
		return convSlice[uint8, float64](x.Bytes())
	case tensor.I16:
		return convSlice[int16, float64](x.I16())
	case tensor.U16:
		return convSlice[uint16, float64](x.U16())
	case tensor.I4:
		return convSlice[int8, float64](x.I4())
	case tensor.U4:
		return convSlice[uint8, float64](x.U4())
	case tensor.I32:
		return convSlice[int32, float64](x.I32())
	case tensor.I64:
		return convSlice[int64, float64](x.I64())
	case tensor.U32:
		return convSlice[uint32, float64](x.U32())
	case tensor.U64:
		return convSlice[uint64, float64](x.U64())
	}
	panic(fmt.Sprintf("cpufallback: toF64s on %v", x.Type()))
}

// toI64s returns an int64 copy of an integer or boolean tensor (floats are
// truncated toward zero).
func toI64s(x *tensor.Tensor) []int64 {
	switch x.Type() {
	case tensor.I8:
		return convSlice[int8, int64](x.I8())
	case tensor.U8, tensor.Bool:
		return convSlice[uint8, int64](x.Bytes())
	case tensor.I16:
		return convSlice[int16, int64](x.I16())
	case tensor.U16:
		return convSlice[uint16, int64](x.U16())
	case tensor.I4:
		return convSlice[int8, int64](x.I4())
	case tensor.U4:
		return convSlice[uint8, int64](x.U4())
	case tensor.I32:
		return convSlice[int32, int64](x.I32())
	case tensor.I64:
		return append([]int64(nil), x.I64()...)
	case tensor.U32:
		return convSlice[uint32, int64](x.U32())
	case tensor.U64:
		return convSlice[uint64, int64](x.U64()) // wraps beyond 2^63-1
	}
	f := toF64s(x)
	out := make([]int64, len(f))
	for i, v := range f {
		out[i] = int64(v)
	}
	return out
}

// storeF64 writes float64 values into dst, rounding to its float type or
// truncating toward zero (and wrapping) for integer types.
func storeF64(dst *tensor.Tensor, v []float64) {
	switch dst.Type() {
	case tensor.F32:
		copy(dst.F32(), convSlice[float64, float32](v))
	case tensor.F64:
		copy(dst.F64(), v)
	case tensor.F16, tensor.BF16, tensor.F8E4M3FN, tensor.F8E4M3FNUZ, tensor.F8E5M2, tensor.F8E5M2FNUZ:
		storeF32(dst, convSlice[float64, float32](v))
	case tensor.Bool:
		d := dst.Bool()
		for i, f := range v {
			d[i] = f != 0
		}
	default:
		i64 := make([]int64, len(v))
		for i, f := range v {
			i64[i] = int64(f)
		}
		storeI64(dst, i64)
	}
}

// storeI64 writes int64 values into an integer tensor, wrapping like a C
// cast; float destinations get the nearest value.
func storeI64(dst *tensor.Tensor, v []int64) {
	switch dst.Type() {
	case tensor.I8:
		copy(dst.I8(), convSlice[int64, int8](v))
	case tensor.U8:
		copy(dst.U8(), convSlice[int64, uint8](v))
	case tensor.I16:
		copy(dst.I16(), convSlice[int64, int16](v))
	case tensor.U16:
		copy(dst.U16(), convSlice[int64, uint16](v))
	case tensor.I4, tensor.U4:
		lo, hi, _ := dst.Type().IntRange()
		d := dst.Bytes()
		for i, x := range v {
			d[i] = byte(min(max(x, lo), hi)) // 4-bit types saturate (tensor.Convert)
		}
	case tensor.I32:
		copy(dst.I32(), convSlice[int64, int32](v))
	case tensor.I64:
		copy(dst.I64(), v)
	case tensor.U32:
		copy(dst.U32(), convSlice[int64, uint32](v))
	case tensor.U64:
		copy(dst.U64(), convSlice[int64, uint64](v))
	default:
		storeF64(dst, convSlice[int64, float64](v))
	}
}

// uint64s returns a uint64 copy of an integer tensor: u64 exactly, the
// others converted as a C cast does.
func uint64s(x *tensor.Tensor) []uint64 {
	if x.Type() == tensor.U64 {
		return append([]uint64(nil), x.U64()...)
	}
	return convSlice[int64, uint64](toI64s(x))
}

// intRange returns the smallest and largest value of an integer type
// (0..255 for Bool, which the kernels store as bytes).
func intRange(t tensor.ElementType) (lo, hi int64) {
	if t == tensor.Bool {
		return 0, math.MaxUint8
	}
	if lo, hi, ok := t.IntRange(); ok {
		return lo, hi
	}
	return math.MinInt64, math.MaxInt64
}

// intsOf reads a 0-D or 1-D integer tensor (i32 or i64, as ONNX allows for
// axes, starts, shapes, repeats) as []int64.
func intsOf(n *graph.Node, x *tensor.Tensor, what string) ([]int64, error) {
	if !x.Type().IsInteger() {
		return nil, n.Errorf("%w: %s must be an integer tensor, got %v", tensor.ErrType, what, x)
	}
	if x.Rank() > 1 {
		return nil, n.Errorf("%w: %s must be a scalar or 1-D tensor, got %v", tensor.ErrShape, what, x)
	}
	return toI64s(x), nil
}

// nnFloatKernel adapts a kernel written for f32 data to every float type:
// f16, bf16 and f64 inputs are converted to f32, and f32 outputs are
// converted back to the type of input 0, except the outputs listed in
// keepF32 (statistics outputs whose type does not follow the input).
// Integer inputs (axes, pads, sizes) pass through untouched.
func nnFloatKernel(k Kernel, keepF32 ...int) Kernel {
	return func(n *graph.Node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		if len(in) == 0 || in[0] == nil {
			return nil, n.Errorf("missing input 0")
		}
		t := in[0].Type()
		if !t.IsFloat() {
			return nil, n.Errorf("input 0 has element type %v, want a float type", t)
		}
		if t == tensor.F32 {
			return k(n, in)
		}
		conv := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			if x != nil && x.Type().IsFloat() && x.Type() != tensor.F32 {
				c, err := x.Convert(tensor.F32)
				if err != nil {
					return nil, n.Errorf("input %d: %w", i, err)
				}
				conv[i] = c
				continue
			}
			conv[i] = x
		}
		outs, err := k(n, conv)
		if err != nil {
			return nil, err
		}
	next:
		for i, o := range outs {
			if o == nil || o.Type() != tensor.F32 {
				continue
			}
			for _, keep := range keepF32 {
				if keep == i {
					continue next
				}
			}
			c, err := o.Convert(t)
			if err != nil {
				return nil, n.Errorf("output %d: %w", i, err)
			}
			outs[i] = c
		}
		return outs, nil
	}
}

// nnParallel runs f over [0, n) split into chunks on at most GOMAXPROCS
// goroutines and waits for all of them; no goroutine outlives the call.
func nnParallel(n int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, hi)
	}
	wg.Wait()
}

// nnInts reads an optional integer input (i64 or i32) as []int64. ok is
// false when the input is omitted or empty.
func nnInts(n *graph.Node, in []*tensor.Tensor, i int) ([]int64, bool, error) {
	if i >= len(in) || in[i] == nil {
		return nil, false, nil
	}
	x := in[i]
	switch x.Type() {
	case tensor.I64:
		v := x.I64()
		return append([]int64(nil), v...), len(v) > 0, nil
	case tensor.I32:
		v := x.I32()
		out := make([]int64, len(v))
		for j, e := range v {
			out[j] = int64(e)
		}
		return out, len(v) > 0, nil
	}
	return nil, false, n.Errorf("input %d has element type %v, want i64 or i32", i, x.Type())
}

// nnFloats reads an optional float input as []float32.
func nnFloats(n *graph.Node, in []*tensor.Tensor, i int) ([]float32, bool, error) {
	if i >= len(in) || in[i] == nil {
		return nil, false, nil
	}
	x := in[i]
	if x.Type() != tensor.F32 {
		c, err := x.Convert(tensor.F32)
		if err != nil {
			return nil, false, n.Errorf("input %d: %w", i, err)
		}
		x = c
	}
	v := x.F32()
	return v, len(v) > 0, nil
}

// nnProd multiplies dims.
func nnProd(s []int64) int64 {
	p := int64(1)
	for _, d := range s {
		p *= d
	}
	return p
}

// nnNewF32 allocates a zeroed f32 output tensor.
func nnNewF32(n *graph.Node, shape tensor.Shape) (*tensor.Tensor, error) {
	t, err := tensor.New(tensor.F32, shape)
	if err != nil {
		return nil, n.Errorf("output shape %v: %w", shape, err)
	}
	return t, nil
}

// nnInput returns input i, checking it is present with a rank of at least minRank.
func nnInput(n *graph.Node, in []*tensor.Tensor, i, minRank int) (*tensor.Tensor, error) {
	if i >= len(in) || in[i] == nil {
		return nil, n.Errorf("missing input %d", i)
	}
	if in[i].Rank() < minRank {
		return nil, n.Errorf("input %d has shape %v, want rank >= %d", i, in[i].Shape(), minRank)
	}
	return in[i], nil
}
