// Package wire reads the small binary encodings clinfer writes itself (the
// serialized graph, the export blob header, HETERO's split table):
// varints, length-prefixed strings and fixed-size integers, with every
// length checked against the bytes left so a forged count cannot make a
// reader allocate more than its input justifies. In the data flow of
// DESIGN.md it sits under export/import and the model cache.
package wire
