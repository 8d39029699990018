package graph

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// The OpenVINO IR writer lives in package ir, which imports graph; the
// model's SerializeIR reaches it through the function ir registers when it
// is linked, as image.Decode reaches the formats registered with
// image.RegisterFormat. The root package clinfer links it.
var (
	irWriterMu sync.RWMutex
	irWriter   func(m *Model, doc, bin io.Writer) error
)

// ErrNoIRWriter is returned by SerializeIR in a program that does not link
// the IR writer (package github.com/clinfer/clinfer/ir).
var ErrNoIRWriter = errors.New("graph: the IR writer is not linked (import github.com/clinfer/clinfer/ir or github.com/clinfer/clinfer)")

// RegisterIRWriter sets the function SerializeIR calls. Package ir calls it
// in its init; a second registration panics (a programmer error).
func RegisterIRWriter(f func(m *Model, doc, bin io.Writer) error) {
	irWriterMu.Lock()
	defer irWriterMu.Unlock()
	if f == nil || irWriter != nil {
		panic("graph: RegisterIRWriter called twice or with nil")
	}
	irWriter = f
}

// SerializeIR writes m as OpenVINO IR v11, as ov::serialize does: the XML
// document to doc and the weights to bin. Ops that OpenVINO's opsets
// express exactly are written as those ops, the others in clinfer's own
// opset; reading the two back (Core.ReadModel) gives the same graph.
func (m *Model) SerializeIR(doc, bin io.Writer) error {
	irWriterMu.RLock()
	f := irWriter
	irWriterMu.RUnlock()
	if f == nil {
		return ErrNoIRWriter
	}
	return f(m, doc, bin)
}

// SerializeIRFile writes m to the IR document path and its weights to the
// .bin file beside it (path with the extension .bin).
func (m *Model) SerializeIRFile(path string) error {
	doc, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("graph: serialize IR: %w", err)
	}
	binPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".bin"
	bin, err := os.Create(binPath)
	if err != nil {
		doc.Close()
		return fmt.Errorf("graph: serialize IR: %w", err)
	}
	err = m.SerializeIR(doc, bin)
	if cerr := doc.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("graph: serialize IR: %w", cerr)
	}
	if cerr := bin.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("graph: serialize IR: %w", cerr)
	}
	return err
}
