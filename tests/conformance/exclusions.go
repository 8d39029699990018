package conformance

// Exclusions lists backend-suite cases, as "dir/case", that are not run and
// why. It is only for cases that test something outside clinfer's scope
// (none today: training-mode Dropout and BatchNormalization run, random
// outputs are checked by RandomOutputs, contradicting test data is handled
// by InputQuirks). Cases that need a data type clinfer lacks (complex,
// maps) are not listed: the runner classifies them as unsupported-type
// from the importer's onnx.ErrUnsupportedType.
// Never add a case here to hide a bug: a case that should pass and does not
// is a failure. An entry naming a case that does not exist fails the suite,
// so the list cannot go stale.
var Exclusions = map[string]string{}

// likeQuirk is why the bfloat16 CastLike cases' "like" input takes any
// shape.
const likeQuirk = "ONNX 1.12's test data binds a [1] tensor to input \"like\", which the model declares [3,4]; CastLike reads only its type"

// InputQuirks are the backend-suite cases whose test data contradicts a
// model input's declared shape, with the inputs the runner makes dynamic
// (of any shape) before compiling, and why. The op under test is run as
// the case means it; nothing else is relaxed.
var InputQuirks = map[string]map[string]string{
	"node/test_castlike_BFLOAT16_to_FLOAT":          {"like": likeQuirk},
	"node/test_castlike_FLOAT_to_BFLOAT16":          {"like": likeQuirk},
	"node/test_castlike_BFLOAT16_to_FLOAT_expanded": {"like": likeQuirk},
	"node/test_castlike_FLOAT_to_BFLOAT16_expanded": {"like": likeQuirk},
}
