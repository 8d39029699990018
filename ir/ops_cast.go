package ir

import (
	"encoding/xml"

	"github.com/clinfer/clinfer/tensor"

	"github.com/clinfer/clinfer/graph"
)

// castImports convert element types.
var castImports = []importRow{
	{"Convert", 1, importConvert},
	{"ConvertLike", 1, same("CastLike")},
}

// importConvert is Cast; a Convert of weights that OpenVINO marks as
// decompression keeps the mark (RT.Extra "ir:decompression"), so passes
// can tell compressed weights.
func importConvert(c *layerCtx) ([]graph.Output, error) {
	if err := c.inputs(1, 1); err != nil {
		return nil, err
	}
	t, err := c.elemType("destination_type", 0)
	if err != nil {
		return nil, err
	}
	if t == 0 {
		return nil, c.errorf(ErrInvalidModel, "the Convert has no destination_type")
	}
	return one(c.op("Cast", "", graph.Attrs{"to": int64(t)}, c.in[0]))
}

// castExports write Cast and CastLike.
var castExports = map[string]exportFunc{
	"CastLike": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs() {
			return false, nil
		}
		return e.single("ConvertLike", 1, nil, in...)
	},
	"Cast": func(e *exportCtx) (bool, error) {
		in, ok := e.inputs()
		if !ok || !e.onlyAttrs("to") {
			return false, nil
		}
		t := tensor.ElementType(e.attrInt("to", 0))
		if !t.Valid() {
			return false, nil
		}
		return e.single("Convert", 1, []xml.Attr{dataAttr("destination_type", t.String())}, in...)
	},
}
