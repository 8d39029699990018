package kernels

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// ErrArgs is wrapped by errors about a launch whose arguments do not match
// the kernel's signature.
var ErrArgs = errors.New("kernels: arguments do not match the kernel's signature")

// Arg is one parameter of a __kernel entry point, as its signature in the
// .cl file declares it under a set of build options.
type Arg struct {
	// Name is the parameter's name ("n").
	Name string
	// Type is the declared type without qualifiers ("FT*", "ulong").
	Type string
	// Buffer is set for a __global pointer: the launch binds a device
	// buffer. Otherwise the parameter is a scalar of type Type.
	Buffer bool
}

// String formats the parameter as the signature declares it ("ulong n").
func (a Arg) String() string { return a.Type + " " + a.Name }

// Buffer stands for a device buffer among the arguments CheckArgs checks.
type Buffer struct{}

// scalarKinds maps the OpenCL C scalar types kernels take to the Go type a
// launch passes for them (the cl binding's SetArg takes these).
var scalarKinds = map[string]string{
	"char": "int8", "uchar": "uint8", "short": "int16", "ushort": "uint16", "int": "int32", "uint": "uint32",
	"long": "int64", "ulong": "uint64", "float": "float32", "double": "float64",
}

var (
	sigCache   sync.Map // sigKey -> sigResult
	defineRe   = regexp.MustCompile(`-D(\w+)`)
	typeDefRe  = regexp.MustCompile(`(?m)^\s*#define\s+(\w+)\s+(.*)$`)
	qualifiers = map[string]bool{"const": true, "__global": true, "global": true, "__constant": true, "constant": true, "restrict": true, "volatile": true}
)

type sigResult struct {
	args []Arg
	err  error
}

// Args returns the parameters of k's entry point as its signature declares
// them when built with k's options plus defines ("-DHALF -DT=int"): an
// #ifdef or #ifndef inside the parameter list keeps the parameters the
// defines select. A type that is a macro of the file (cast.cl's SRC_PTR)
// is a buffer when its #define makes a pointer.
func (k Kernel) Args(defines string) ([]Arg, error) {
	defs := map[string]bool{}
	for _, m := range defineRe.FindAllStringSubmatch(k.Options+" "+defines, -1) {
		defs[m[1]] = true
	}
	names := make([]string, 0, len(defs))
	for d := range defs {
		names = append(names, d)
	}
	sort.Strings(names)
	// A generated kernel's signature depends on its source (a chain's
	// input count).
	key := k.File + "/" + k.Entry + "/" + strings.Join(names, ",") + "/" + k.Generated
	if r, ok := sigCache.Load(key); ok {
		return r.(sigResult).args, r.(sigResult).err
	}
	args, err := k.parseArgs(defs)
	sigCache.Store(key, sigResult{args, err})
	return args, err
}

func (k Kernel) parseArgs(defs map[string]bool) ([]Arg, error) {
	src, err := k.Source()
	if err != nil {
		return nil, err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("kernels: kernel %s (%s in %s): %s", k.Name, k.Entry, k.File, fmt.Sprintf(format, a...))
	}
	loc := regexp.MustCompile(`__kernel\s+void\s+` + regexp.QuoteMeta(k.Entry) + `\s*\(`).FindStringIndex(src)
	if loc == nil {
		return nil, bad("no __kernel %s in the source", k.Entry)
	}
	end := strings.IndexByte(src[loc[1]:], ')')
	if end < 0 {
		return nil, bad("the parameter list is not closed")
	}
	// Keep the lines the defines select, dropping the preprocessor lines.
	var kept []string
	var stack []bool // per open #if: whether its lines are kept
	on := func() bool {
		for _, v := range stack {
			if !v {
				return false
			}
		}
		return true
	}
	for _, line := range strings.Split(src[loc[1]:loc[1]+end], "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "#ifdef":
			stack = append(stack, defs[f[1]])
		case len(f) == 2 && f[0] == "#ifndef":
			stack = append(stack, !defs[f[1]])
		case len(f) >= 1 && f[0] == "#else" && len(stack) > 0:
			stack[len(stack)-1] = !stack[len(stack)-1]
		case len(f) >= 1 && f[0] == "#endif" && len(stack) > 0:
			stack = stack[:len(stack)-1]
		case len(f) >= 1 && strings.HasPrefix(f[0], "#"):
			return nil, bad("the parameter list has a %s line, which Args does not read", f[0])
		case on():
			kept = append(kept, line)
		}
	}
	var out []Arg
	for _, p := range strings.Split(strings.Join(kept, " "), ",") {
		words := strings.Fields(strings.ReplaceAll(p, "*", " * "))
		if len(words) == 0 {
			continue
		}
		name := words[len(words)-1]
		var typ []string
		buffer := false
		for _, w := range words[:len(words)-1] {
			switch {
			case w == "__global" || w == "global" || w == "__constant" || w == "constant":
				buffer = true
			case w == "__local" || w == "local":
				return nil, bad("parameter %s is a __local pointer, which launches do not bind", name)
			case !qualifiers[w]:
				typ = append(typ, w)
			}
		}
		t := strings.Join(typ, "")
		if !buffer && !strings.Contains(t, "*") {
			if _, ok := scalarKinds[t]; !ok {
				// A macro of the file: a buffer when it makes a pointer.
				var pointer bool
				for _, m := range typeDefRe.FindAllStringSubmatch(src, -1) {
					if m[1] == t && strings.Contains(m[2], "*") {
						pointer = true
					}
				}
				if !pointer {
					return nil, bad("parameter %s has type %s, neither a buffer nor a scalar Args knows", name, t)
				}
				buffer = true
			}
		}
		out = append(out, Arg{Name: name, Type: t, Buffer: buffer || strings.Contains(t, "*")})
	}
	return out, nil
}

// CheckArgs checks the arguments of a launch of k built with defines
// against its signature (see Args): one argument per parameter, a Buffer
// for each buffer parameter and, for each scalar, the Go type of its
// OpenCL type (ulong: uint64, int: int32, float: float32...). The error
// wraps ErrArgs and names the kernel and the first argument that does not
// match, by position and name.
func CheckArgs(k Kernel, defines string, args []any) error {
	sig, err := k.Args(defines)
	if err != nil {
		return err
	}
	where := fmt.Sprintf("kernels: kernel %s (%s in %s", k.Name, k.Entry, k.File)
	if d := strings.TrimSpace(defines); d != "" {
		where += " with " + d
	}
	where += ")"
	if len(args) != len(sig) {
		list := make([]string, len(sig))
		for i, a := range sig {
			list[i] = a.String()
		}
		return fmt.Errorf("%s takes %d arguments (%s), the launch passes %d: %w", where, len(sig), strings.Join(list, ", "), len(args), ErrArgs)
	}
	for i, p := range sig {
		_, isBuf := args[i].(Buffer)
		got := fmt.Sprintf("%T", args[i])
		switch {
		case p.Buffer && !isBuf:
			return fmt.Errorf("%s: argument %d (%s) is a buffer, the launch passes a %s: %w", where, i, p, got, ErrArgs)
		case !p.Buffer && isBuf:
			return fmt.Errorf("%s: argument %d (%s) is a scalar, the launch passes a buffer: %w", where, i, p, ErrArgs)
		case !p.Buffer && scalarKinds[p.Type] != got:
			return fmt.Errorf("%s: argument %d (%s) takes a Go %s, the launch passes a %s: %w", where, i, p, scalarKinds[p.Type], got, ErrArgs)
		}
	}
	return nil
}
