// A C++ function in a namespace: its mangled name must be demangled.
namespace store {
__attribute__((noinline)) int flush_pages(int n) { return n * 3; }
}  // namespace store
int main(int argc, char **) { return store::flush_pages(argc) == 3 ? 0 : 1; }
