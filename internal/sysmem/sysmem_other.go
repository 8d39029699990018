//go:build !linux

package sysmem

func physical() int64 { return 0 }
