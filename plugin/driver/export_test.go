package driver

// Unregister removes a registered device so tests can register fakes under
// fresh names.
func Unregister(name string) { unregister(name) }
