package npy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/tensor"
)

// header is the parsed dictionary of a .npy header.
type header struct {
	descr     string
	typ       tensor.ElementType
	bigEndian bool
	shape     tensor.Shape
	// width and unit are a string dtype's characters per element and
	// bytes per character (4 for <U, 1 for |S).
	width, unit int
}

// parseHeader parses the Python dict literal of a .npy header, e.g.
// "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }", padded with
// spaces and a newline. Only the literal forms NumPy writes are accepted:
// strings, True/False and tuples of non-negative integers.
func parseHeader(s string) (*header, error) {
	p := &parser{s: s}
	p.skip()
	if !p.eat('{') {
		return nil, p.errorf("header does not start with '{'")
	}
	var h header
	seen := map[string]bool{}
	for {
		p.skip()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skip()
		if !p.eat(':') {
			return nil, p.errorf("missing ':' after key %q", key)
		}
		p.skip()
		if seen[key] {
			return nil, p.errorf("key %q repeated", key)
		}
		seen[key] = true
		switch key {
		case "descr":
			if p.peek() == '[' {
				return nil, fmt.Errorf("%w: structured dtype in header (only plain numeric dtypes are supported)", ErrUnsupported)
			}
			d, err := p.str()
			if err != nil {
				return nil, err
			}
			if err := h.setDescr(d); err != nil {
				return nil, err
			}
		case "fortran_order":
			switch {
			case p.word("False"):
			case p.word("True"):
				return nil, fmt.Errorf("%w: fortran_order True (save the array with np.ascontiguousarray first)", ErrUnsupported)
			default:
				return nil, p.errorf("fortran_order is not True or False")
			}
		case "shape":
			if h.shape, err = p.tuple(); err != nil {
				return nil, err
			}
		default:
			return nil, p.errorf("unknown key %q", key)
		}
		p.skip()
		if p.eat(',') {
			continue
		}
		p.skip()
		if !p.eat('}') {
			return nil, p.errorf("missing ',' or '}' after %q", key)
		}
		break
	}
	p.skip()
	if p.i != len(p.s) {
		return nil, p.errorf("trailing text after the header dict")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return nil, fmt.Errorf("%w: header has no %q key", ErrFormat, k)
		}
	}
	bytes := int64(h.typ.Size())
	if h.typ == tensor.String {
		bytes = int64(h.width * h.unit)
	}
	for _, d := range h.shape {
		if d != 0 && bytes > maxBytes/d {
			return nil, fmt.Errorf("%w: shape %v of %s is over %d bytes", ErrUnsupported, h.shape, h.descr, int64(maxBytes))
		}
		bytes *= d
	}
	return &h, nil
}

// supportedDescrs lists the dtypes Read takes, for errors.
const supportedDescrs = "<f4 <f2 <f8 <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1 <U<n> |S<n>, and ml_dtypes' bfloat16 float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz"

func (h *header) setDescr(d string) error {
	h.descr = d
	if t, ok := namedDtypes[d]; ok {
		h.typ = t
		return nil
	}
	if len(d) >= 3 && (d[1] == 'U' || d[1] == 'S') {
		return h.setStringDescr(d)
	}
	if len(d) != 3 {
		return fmt.Errorf("%w: dtype %q (supported: %s)", ErrUnsupported, d, supportedDescrs)
	}
	t, ok := dtypes[d[1:]]
	if !ok {
		return fmt.Errorf("%w: dtype %q (supported: %s)", ErrUnsupported, d, supportedDescrs)
	}
	switch d[0] {
	case '<', '|', '=': // '=' is native; clinfer only runs on little-endian hosts
	case '>':
		h.bigEndian = true
	default:
		return fmt.Errorf("%w: dtype %q has byte order %q (want <, >, = or |)", ErrUnsupported, d, d[0])
	}
	h.typ = t
	return nil
}

type parser struct {
	s string
	i int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: header at byte %d: %s", ErrFormat, p.i, fmt.Sprintf(format, args...))
}

func (p *parser) skip() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\n' || p.s[p.i] == '\t' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) word(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// str parses a quoted string without escapes, which is all NumPy writes.
func (p *parser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.errorf("expected a quoted string")
	}
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", p.errorf("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.ContainsRune(v, '\\') {
		return "", p.errorf("escaped string %q", v)
	}
	p.i += end + 2
	return v, nil
}

// tuple parses "()", "(3,)", "(1, 3, 48)" (a trailing comma is allowed).
func (p *parser) tuple() (tensor.Shape, error) {
	if !p.eat('(') {
		return nil, p.errorf("shape is not a tuple")
	}
	shape := tensor.Shape{}
	for {
		p.skip()
		if p.eat(')') {
			return shape, nil
		}
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		if start == p.i {
			return nil, p.errorf("shape dimension is not a non-negative integer")
		}
		// NumPy may write Python 2 longs as "3L".
		d, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
		if err != nil {
			return nil, p.errorf("shape dimension %q: %v", p.s[start:p.i], err)
		}
		p.eat('L')
		shape = append(shape, d)
		p.skip()
		if p.eat(',') {
			continue
		}
		p.skip()
		if !p.eat(')') {
			return nil, p.errorf("missing ',' or ')' in shape")
		}
		if len(shape) == 1 {
			return nil, p.errorf("one-element shape tuple needs a trailing comma")
		}
		return shape, nil
	}
}
