//go:build unix

package driver

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the whole of f privately: the pages are the page cache's
// until written, and a write (none is made) would copy the page rather
// than fault.
func mapFile(f *os.File) ([]byte, func() error, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size <= 0 || int64(int(size)) != size {
		return nil, nil, fmt.Errorf("plugin: %s: not a regular file to map", f.Name())
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("plugin: mapping %s: %w", f.Name(), err)
	}
	return data, func() error {
		if err := unix.Munmap(data); err != nil {
			return fmt.Errorf("plugin: unmapping %s: %w", f.Name(), err)
		}
		return nil
	}, nil
}
