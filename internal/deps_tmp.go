package internal

import (
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
	_ "golang.org/x/sys/cpu"
	_ "gonum.org/v1/gonum/blas/gonum"
	_ "gonum.org/v1/gonum/stat"
	_ "google.golang.org/protobuf/encoding/protowire"
)
