// Package textpage renders deterministic synthetic document images for the
// OCR models: pages of text in a made-up script (for PP-OCR det) and
// single text lines (for PP-OCR cls), from a seed, with no font files. The
// glyphs are strokes on a 5x7 grid (bars, posts, diagonals, dots), drawn
// at several sizes with anti-aliased edges in dark inks on off-white paper
// with a gradient and noise; pages also carry a title, ruled lines and a
// picture-like block that is not text. Quantization calibrates on them
// and the int8-vs-f32 comparisons run on them.
//
// In DESIGN.md's data flow it stands where the user's images do, before
// the model's inputs: test data for internal tools (cmd/quantize's
// calibration samples via ./gen, the int8 comparisons); main's
// internal/page draws the one fixed page of the OCR examples.
package textpage
