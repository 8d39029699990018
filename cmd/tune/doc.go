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
// It compiles the model with the heuristics (before), then with
// GPU_TUNING_MODE (a progress bar on a terminal while the plan is tuned),
// and confirms every choice that differs from the heuristics in the model
// itself: the two compiles run in interleaved rounds (-runs, at least 25)
// with profiling, and a choice is kept only where its nodes' device time
// beats the heuristics' by more than the noise (a sign test over the
// rounds, Holm-corrected over the model's choices); the others' records
// are replaced by records keeping the heuristics. Then the whole model
// with the kept records runs against the heuristics the same way, and
// unless it is faster beyond the noise those records keep the heuristics
// too: what is recorded (and shipped with -ship) is never slower than the
// heuristics it replaces. It prints per op the chosen variant, where it
// came from (tuned now, or recorded earlier), its time before and after
// as the tuner measured it alone, and the model-level verdict (kept or
// dropped, and the speedup of its nodes in the model), then both medians
// of the whole model. -mode fast times a budgeted subset of each
// family's candidates, -mode exhaustive all of them (it replaces fast
// records). Without -cache_dir or -tuning_file the file goes under
// clinfer in the user's cache directory. -v prints the kernel compiler's
// output and why candidates were refused.
//
// In the data flow of DESIGN.md it is a client of driver.Core and of the
// GPU device's tuner (clbackend, clbackend/tune); the device bundle runs
// a fast pass as one of its device steps (cmd/devicereport).
package main
