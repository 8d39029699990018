// Command gen writes calibration samples of internal/textpage as .npy
// files, the -calib directory of cmd/quantize: text pages normalised as
// PP-OCR det takes them, or text lines (half of them upside down)
// normalised as PP-OCR cls takes them.
//
//	go run ./internal/textpage/gen -o /tmp/det_calib -n 8 -h 640 -w 640
//	go run ./internal/textpage/gen -o /tmp/cls_calib -n 32 -h 48 -w 192 -lines
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/clinfer/clinfer/internal/npy"
	"github.com/clinfer/clinfer/internal/textpage"
)

func main() {
	out := flag.String("o", "", "directory to write the samples to (created)")
	n := flag.Int("n", 8, "number of samples")
	h := flag.Int("h", 640, "height")
	w := flag.Int("w", 640, "width")
	lines := flag.Bool("lines", false, "text lines normalised for PP-OCR cls instead of pages for det")
	seed := flag.Uint("seed", 100, "seed of the first sample (the next ones follow)")
	flag.Parse()
	if *out == "" || *n < 1 || *h < 8 || *w < 8 {
		log.Fatal("want -o DIR, -n >= 1 and -h, -w >= 8")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for i := range *n {
		s := uint32(*seed) + uint32(i)
		x := textpage.Page(s, *h, *w).Normalised(textpage.DetMean, textpage.DetStd)
		if *lines {
			x = textpage.Line(s, *h, *w, i%2 == 1).Normalised(textpage.ClsMean, textpage.ClsStd)
		}
		if err := npy.WriteFile(filepath.Join(*out, fmt.Sprintf("sample_%03d.npy", i)), x); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("wrote %d samples to %s\n", *n, *out)
}
