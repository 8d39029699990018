// Package preprocess is clinfer's PrePostProcessor, after OpenVINO's
// ov::preprocess: it turns what an application has (u8 images in NHWC,
// BGR or NV12, of any size) into what a model takes (f32 NCHW of a fixed
// size, normalised), and a model's outputs into what the application
// wants, as nodes of the model's graph.
//
// In the data flow of DESIGN.md it sits between reading a model and
// compiling it: New(model), the configuration, then Build, whose model
// goes to Core.CompileModel. The steps are graph ops (Transpose, Cast,
// Resize, Sub, Div, Gather, NV12toRGB), so every device runs them: the
// GPU on the device, next to the model (the bytes that cross the bus are
// the application's u8 ones), with the fusion passes folding what they
// can into the first convolution (fusion.FoldInputScaleShift: a per-channel
// Scale always, a Mean where the convolution does not pad). Export and
// the model cache keep them, as they keep every node.
package preprocess
