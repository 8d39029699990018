// Command gen writes testdata/page.png, the 1280x960 page of
// internal/page that the OCR example and benchmarks read.
package main

import (
	"flag"
	"image/png"
	"log"
	"os"

	"github.com/clinfer/clinfer/internal/page"
)

func main() {
	out := flag.String("o", "testdata/page.png", "the PNG to write")
	flag.Parse()
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(f, page.Render(1280, 960)); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
