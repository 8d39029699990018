// Package virtual holds what the virtual devices AUTO and BATCH share:
// a device that owns a driver.Core of its own to reach the real devices it
// runs models on, its property accessors, and the rule for which of its
// properties a real device gets. In the data flow of DESIGN.md it sits
// between the Core's registry and those devices' plugins.
package virtual
