package kernels

import (
	"embed"
	"io/fs"
	"path"
	"sort"
)

// tuningFiles holds the tuning databases shipped with clinfer, one per
// device (tuning/<vendor>-<device>.json), CLBlast-style: the variant
// choices tuning made on that device, which the GPU device reads under the
// user's own tuning file (package clbackend/tune parses them). `make
// tuning-db REPORT=<device bundle report>` writes one from a device
// bundle's run.
//
//go:embed tuning
var tuningFiles embed.FS

// ShippedTuning returns the shipped tuning databases: each file's name
// (pocl-skylake-avx512.json) and contents, in name order.
func ShippedTuning() ([]string, [][]byte) {
	entries, err := fs.ReadDir(tuningFiles, "tuning")
	if err != nil {
		return nil, nil // the embed holds the directory: never
	}
	var names []string
	var data [][]byte
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		if path.Ext(e.Name()) != ".json" {
			continue
		}
		b, err := tuningFiles.ReadFile(path.Join("tuning", e.Name()))
		if err != nil {
			continue
		}
		names = append(names, e.Name())
		data = append(data, b)
	}
	return names, data
}
