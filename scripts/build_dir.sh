# Sourced by setup.sh and test.sh: the build directory (and compiler) for the
# flags in EF_CMAKE_ARGS. Each kind of build has its own directory, so a
# sanitizer build never reconfigures the plain one (and TSan's compiler,
# clang, can be chosen when its directory is first configured).
case " ${EF_CMAKE_ARGS:-} " in
  *-DEF_TSAN=ON*)
    build_dir=build-tsan
    compiler_args=(-DCMAKE_CXX_COMPILER=clang++) ;;
  *-DEF_SANITIZE=ON*)
    build_dir=build-asan
    compiler_args=() ;;
  *)
    build_dir=build
    compiler_args=() ;;
esac
build_dir=${EF_BUILD_DIR:-$build_dir}
