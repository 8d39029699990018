package driver

import (
	"errors"
	"os"
)

// CacheBlobFile is what Core.CompileModel gives a device's ImportModel for
// a blob of its model cache: the open file, which the model cache replaces
// only by a rename (writeCacheBlob), never rewrites in place, so a device
// may map it (Map) instead of reading it and keep the mapping as long as
// the imported model uses it. It reads as the file does.
type CacheBlobFile struct{ *os.File }

// Map maps the blob (read-only data, copy-on-write pages) and parses it
// (ParseBlob): its sections' data lie in the mapping until unmap, after
// which nothing may read them. Reading the blob instead copied every byte
// into fresh memory (IS-Net medium's 291 MB: 1.5-2.4 s of an import, most
// of it faulting that memory in, against 0.3-0.4 s for the checksums over
// the mapped page cache). Where a file cannot be mapped, Map reads the
// blob (ReadBlob) and unmap is nil.
func (f *CacheBlobFile) Map(device, architecture string) (b *Blob, unmap func() error, err error) {
	data, unmap, err := mapFile(f.File)
	if err != nil {
		b, err := ReadBlob(f.File, device, architecture)
		return b, nil, err
	}
	if b, err = ParseBlob(data, device, architecture); err != nil {
		return nil, nil, errors.Join(err, unmap())
	}
	return b, unmap, nil
}
