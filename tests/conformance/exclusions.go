package conformance

// Exclusions lists backend-suite cases, as "dir/case", that are not run and
// why. It is only for cases that test something outside clinfer's scope
// (training-mode behaviour, string tensors, sequence/optional values,
// unsigned 16/32/64-bit element types) or whose test data contradicts its
// model. Never add a case here to hide a bug: a case that should pass and
// does not is a failure. An entry naming a case that does not exist fails
// the suite, so the list cannot go stale.
var Exclusions = map[string]string{
	// Training mode: random masks or running statistics; clinfer is
	// inference-only.
	"node/test_batchnorm_epsilon_training_mode": "training-mode BatchNormalization (running mean/var outputs)",
	"node/test_batchnorm_example_training_mode": "training-mode BatchNormalization (running mean/var outputs)",
	"node/test_training_dropout":                "training-mode Dropout draws a random mask",
	"node/test_training_dropout_default":        "training-mode Dropout draws a random mask",
	"node/test_training_dropout_default_mask":   "training-mode Dropout draws a random mask",
	"node/test_training_dropout_mask":           "training-mode Dropout draws a random mask",

	// String tensors.
	"node/test_strnormalizer_export_monday_casesensintive_lower":        "string element type",
	"simple/test_strnorm_model_monday_casesensintive_lower":             "string element type",
	"node/test_strnormalizer_export_monday_casesensintive_nochangecase": "string element type",
	"simple/test_strnorm_model_monday_casesensintive_nochangecase":      "string element type",
	"node/test_strnormalizer_export_monday_casesensintive_upper":        "string element type",
	"simple/test_strnorm_model_monday_casesensintive_upper":             "string element type",
	"node/test_strnormalizer_export_monday_empty_output":                "string element type",
	"simple/test_strnorm_model_monday_empty_output":                     "string element type",
	"node/test_strnormalizer_export_monday_insensintive_upper_twodim":   "string element type",
	"simple/test_strnorm_model_monday_insensintive_upper_twodim":        "string element type",
	"node/test_strnormalizer_nostopwords_nochangecase":                  "string element type",
	"simple/test_strnorm_model_nostopwords_nochangecase":                "string element type",
	"node/test_cast_FLOAT_to_STRING":                                    "string element type",
	"node/test_cast_STRING_to_FLOAT":                                    "string element type",
	"node/test_castlike_FLOAT_to_STRING":                                "string element type",
	"node/test_castlike_FLOAT_to_STRING_expanded":                       "string element type",
	"node/test_castlike_STRING_to_FLOAT":                                "string element type",
	"node/test_castlike_STRING_to_FLOAT_expanded":                       "string element type",

	// Sequence and optional values: clinfer values are tensors only.
	"node/test_identity_opt":                                       "sequence/optional value, not a tensor",
	"node/test_identity_sequence":                                  "sequence/optional value, not a tensor",
	"node/test_loop13_seq":                                         "sequence/optional value, not a tensor",
	"node/test_loop16_seq_none":                                    "sequence/optional value, not a tensor",
	"node/test_optional_get_element":                               "sequence/optional value, not a tensor",
	"node/test_optional_get_element_sequence":                      "sequence/optional value, not a tensor",
	"node/test_optional_has_element":                               "sequence/optional value, not a tensor",
	"node/test_optional_has_element_empty":                         "sequence/optional value, not a tensor",
	"node/test_sequence_insert_at_back":                            "sequence/optional value, not a tensor",
	"node/test_sequence_insert_at_front":                           "sequence/optional value, not a tensor",
	"node/test_sequence_map_add_1_sequence_1_tensor":               "sequence/optional value, not a tensor",
	"node/test_sequence_map_add_1_sequence_1_tensor_expanded":      "sequence/optional value, not a tensor",
	"node/test_sequence_map_add_2_sequences":                       "sequence/optional value, not a tensor",
	"node/test_sequence_map_add_2_sequences_expanded":              "sequence/optional value, not a tensor",
	"node/test_sequence_map_extract_shapes":                        "sequence/optional value, not a tensor",
	"node/test_sequence_map_extract_shapes_expanded":               "sequence/optional value, not a tensor",
	"node/test_sequence_map_identity_1_sequence":                   "sequence/optional value, not a tensor",
	"node/test_sequence_map_identity_1_sequence_1_tensor":          "sequence/optional value, not a tensor",
	"node/test_sequence_map_identity_1_sequence_1_tensor_expanded": "sequence/optional value, not a tensor",
	"node/test_sequence_map_identity_1_sequence_expanded":          "sequence/optional value, not a tensor",
	"node/test_sequence_map_identity_2_sequences":                  "sequence/optional value, not a tensor",
	"node/test_sequence_map_identity_2_sequences_expanded":         "sequence/optional value, not a tensor",

	// Test-data bugs in ONNX 1.12.
	"node/test_castlike_BFLOAT16_to_FLOAT_expanded": "test data binds a [1] tensor to input \"like\", which the model declares [3,4]",
	"node/test_castlike_FLOAT_to_BFLOAT16_expanded": "test data binds a [1] tensor to input \"like\", which the model declares [3,4]",

	// Unsigned 16/32/64-bit element types.
	"node/test_bitshift_left_uint16":     "uint16 element type",
	"node/test_bitshift_left_uint32":     "uint32 element type",
	"node/test_bitshift_left_uint64":     "uint64 element type",
	"node/test_bitshift_right_uint16":    "uint16 element type",
	"node/test_bitshift_right_uint32":    "uint32 element type",
	"node/test_bitshift_right_uint64":    "uint64 element type",
	"node/test_max_uint16":               "uint16 element type",
	"node/test_max_uint32":               "uint32 element type",
	"node/test_max_uint64":               "uint64 element type",
	"node/test_min_uint16":               "uint16 element type",
	"node/test_min_uint32":               "uint32 element type",
	"node/test_min_uint64":               "uint64 element type",
	"node/test_mod_uint16":               "uint16 element type",
	"node/test_mod_uint32":               "uint32 element type",
	"node/test_mod_uint64":               "uint64 element type",
	"node/test_pow_types_float32_uint32": "uint32 element type",
	"node/test_pow_types_float32_uint64": "uint64 element type",
}
