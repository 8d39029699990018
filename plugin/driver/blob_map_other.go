//go:build !unix

package driver

import (
	"errors"
	"os"
)

// mapFile is not available here: Map reads the blob.
func mapFile(*os.File) ([]byte, func() error, error) {
	return nil, nil, errors.New("plugin: mapping files is not supported on this system")
}
