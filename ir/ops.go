package ir

import (
	"slices"
	"sort"

	"github.com/clinfer/clinfer/graph"
)

// maxOpset is the newest OpenVINO opset whose layers the reader accepts.
// An op takes its semantics from the newest row of its type whose opset
// is not after the layer's (a layer of "opset8" Round is Round-5).
const maxOpset = 16

// ownOpset is the version clinfer's writer gives layers of ops that
// OpenVINO's opsets cannot express as they are in clinfer's op set; the
// reader takes them back as those ops, attribute for attribute.
const ownOpset = "clinfer"

// importFunc converts one layer into graph nodes of the op set. It returns
// one Output per output port of the layer (a zero Output for an output it
// cannot provide; the layer's error says so if something reads it).
type importFunc func(c *layerCtx) ([]graph.Output, error)

// importRow is one row of the import table: an OpenVINO op type from the
// opset that introduced that version of it.
type importRow struct {
	// Type is the op type as IR spells it ("Convolution").
	Type string
	// Since is the first opset with this version of the op.
	Since int
	// Import converts a layer.
	Import importFunc
}

// importTable maps each op type to its rows, oldest first. The families'
// files (ops_<family>.go) hold the rows; this is the one list of them.
// The control ops' importers read bodies through the table, so it is
// built in init rather than by its declaration (an initialisation cycle).
var importTable map[string][]importRow

func init() { importTable = buildImportTable() }

func buildImportTable() map[string][]importRow {
	t := map[string][]importRow{}
	for _, rows := range [][]importRow{modelImports, eltwiseImports, activationImports, compareImports,
		movementImports, indexImports, reduceImports, convImports, poolImports, normImports, gemmImports,
		resizeImports, castImports, shapeImports, compactImports, colorImports, detectionImports, signalImports, quantImports, recurrentImports,
		controlImports, randomImports} {
		for _, r := range rows {
			t[r.Type] = append(t[r.Type], r)
		}
	}
	for k := range t {
		sort.SliceStable(t[k], func(i, j int) bool { return t[k][i].Since < t[k][j].Since })
	}
	return t
}

// lookupImport returns the row of op type t for a layer of opset n: the
// newest row whose Since is not after n.
func lookupImport(t string, n int) (importRow, bool) {
	rows := importTable[t]
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Since <= n {
			return rows[i], true
		}
	}
	return importRow{}, false
}

// OpTypes returns the OpenVINO op types the reader reads, each as
// "Type-N" for every opset version N it has a row for, sorted.
func OpTypes() []string {
	var out []string
	for t, rows := range importTable {
		for _, r := range rows {
			out = append(out, t+"-"+itoa(r.Since))
		}
	}
	slices.Sort(out)
	return out
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// same converts a layer into the graph op opType with the same inputs and
// no attributes (the element-wise ops and others whose IR form is the
// op set's).
func same(opType string) importFunc {
	return func(c *layerCtx) ([]graph.Output, error) {
		spec, _ := graph.Lookup(opType)
		if err := c.inputs(spec.MinInputs, spec.MaxInputs); err != nil {
			return nil, err
		}
		n, err := c.node(opType, "", c.in, nil, 1)
		if err != nil {
			return nil, err
		}
		return outs(n), nil
	}
}
