package internal
import (
 _ "gonum.org/v1/gonum/blas/gonum"
 _ "gonum.org/v1/gonum/stat"
 _ "github.com/stretchr/testify/require"
 _ "golang.org/x/sys/cpu"
 _ "google.golang.org/protobuf/encoding/protowire"
 _ "go.uber.org/goleak"
 _ "github.com/schollz/progressbar/v3"
)

