// Command tune tunes the kernels of a model on a GPU device: for every
// distinct (kernel family, shape, options) of the model's launch plan it
// times the declared variants (kernels.Families) on the device with the
// model's real shapes, checks each against the CPU reference, keeps the
// fastest and records it in the device's tuning file, which every later
// compile on that device reads with no tuning property set.
//
//	tune -m MODEL.onnx [-d GPU] [-shape NAME=[1,3,640,640]] [-mode fast|exhaustive]
//	     [-cache_dir DIR | -tuning_file FILE] [-runs N] [-p KEY=VALUE ...] [-v] [-json FILE]
//
// It times the model with the heuristics first (before), then compiles it
// with GPU_TUNING_MODE (a progress bar on a terminal while the plan is
// tuned) and times it again (after), and prints per op the chosen variant,
// where it came from (tuned now, or recorded earlier) and its time before
// and after, then both medians. -mode fast times a budgeted subset of each
// family's candidates, -mode exhaustive all of them (it replaces fast
// records). Without -cache_dir or -tuning_file the file goes under
// clinfer in the user's cache directory. -v prints the kernel compiler's
// output and why candidates were refused.
//
// In the data flow of DESIGN.md it is a client of driver.Core and of the
// GPU device's tuner (clbackend, clbackend/tune); the device bundle runs
// a fast pass as one of its device steps (cmd/devicereport).
package main
