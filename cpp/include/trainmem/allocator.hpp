// PyTorch's CUDA caching allocator, as far as its peaks go: what `torch.cuda.max_memory_allocated`
// and `torch.cuda.max_memory_reserved` report for a sequence of allocations and frees. The rules
// are those of c10/cuda/CUDACachingAllocator.cpp (docs/formulas.md quotes each):
//   - every request is rounded up to a multiple of 512 B (round_size, kMinBlockSize);
//   - requests of at most 1 MiB (kSmallSize) come from the small pool, whose segments are 2 MiB
//     (kSmallBuffer); larger ones from the large pool, whose segments are 20 MiB (kLargeBuffer)
//     for requests under 10 MiB (kMinLargeAlloc) and the request rounded up to 2 MiB (kRoundLarge)
//     above (get_allocation_size);
//   - a request takes the smallest cached free block of its pool that holds it (best fit,
//     get_free_block), and splits it when what remains is at least 512 B in the small pool or
//     more than 1 MiB in the large pool (should_split);
//   - a freed block merges with free neighbours in its segment (try_merge_blocks) and stays
//     cached: reserved, not allocated.
//   - a block is cached for the stream that allocated its segment, and only a request on that
//     stream takes it (BlockComparatorSize orders the pools by stream first; get_free_block
//     returns nothing of another stream's).
// With PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (AllocatorConfig), each stream's pool is
// one segment of reserved address space, mapped page by page as it grows (ExpandableSegment, with
// pages of kSmallBuffer in the small pool and kLargeBuffer in the large one). Best fit counts a
// block's size with the unmapped space after it (get_free_block's expandable_size), so a larger
// block is taken before one that could grow. A request no cached block holds maps pages, rounded
// up, into the lowest unmapped block that has room with the free block before it, else at the
// segment's end (find_expandable_block, try_allocate_expandable_block, map_block). A block is
// split whenever at least 512 B remain (should_split), and empty_cache unmaps every free block's
// whole pages (release_blocks, unmap_block).
// With max_split_size_mb (AllocatorConfig), a block of at least that size is "oversize": a
// request under it never takes one (get_free_block), and a request of it or more takes one only
// when it leaves less than 20 MiB (kLargeBuffer) over; outside expandable segments a block is split
// only for a request under it (should_split).
// No frees delayed by record_stream, and the cache is emptied only where the step calls
// torch.cuda.empty_cache() (a run that fits never hits the out-of-memory path that releases it,
// nor garbage_collection_threshold, which acts only under
// torch.cuda.set_per_process_memory_fraction: malloc's `set_fraction &&`).
#pragma once

#include <cstddef>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

namespace trainmem {

constexpr double kAllocatorMinBlockBytes = 512;            // kMinBlockSize
constexpr double kAllocatorSmallSizeBytes = 1 << 20;       // kSmallSize, 1 MiB
constexpr double kAllocatorSmallBufferBytes = 2 << 20;     // kSmallBuffer, 2 MiB
constexpr double kAllocatorLargeBufferBytes = 20 << 20;    // kLargeBuffer, 20 MiB
constexpr double kAllocatorMinLargeAllocBytes = 10 << 20;  // kMinLargeAlloc, 10 MiB
constexpr double kAllocatorRoundLargeBytes = 2 << 20;      // kRoundLarge, 2 MiB

// round_size: a request's block size.
double allocator_block_bytes(double request_bytes);
// get_allocation_size: the segment cudaMalloc'd when no cached block holds a block of this size.
double allocator_segment_bytes(double block_bytes);

// PYTORCH_CUDA_ALLOC_CONF's settings that the replay follows.
struct AllocatorConfig {
  bool expandable_segments = false;
  double max_split_size_bytes = 0;  // max_split_size_mb × 2^20; 0: no limit (PyTorch's default)
};

class CachingAllocator {
 public:
  using Handle = std::size_t;
  using Stream = int;  // 0: the compute stream
  // The handle of a request that took nothing, which frees nothing.
  static constexpr Handle kNothing = std::numeric_limits<std::size_t>::max();
  explicit CachingAllocator(AllocatorConfig config = {}) : config_(config) {}
  // A request of `bytes` on `stream` (0 is a valid request that takes no memory); the handle
  // frees it.
  Handle allocate(double bytes, Stream stream = 0);
  void free(Handle handle);
  // torch.cuda.empty_cache() (release_cached_blocks): every cached segment that holds no
  // allocation is given back to the driver; under expandable segments, every whole page of every
  // free block (release_blocks → unmap_block), between live blocks too.
  void empty_cache();

  double allocated_bytes() const { return allocated_; }
  double reserved_bytes() const { return reserved_; }
  double peak_allocated_bytes() const { return peak_allocated_; }
  double peak_reserved_bytes() const { return peak_reserved_; }

 private:
  // Under expandable segments a free block may be unmapped (Block::mapped in PyTorch): address
  // space whose pages empty_cache gave back, in no free pool, mapped again when a request takes it
  // (find_expandable_block, map_block).
  struct Block {
    std::size_t segment = 0;
    double offset = 0;
    double size = 0;
    bool free = true;
    bool mapped = true;
  };
  struct Segment {
    Stream stream = 0;
    bool small = false;
    double size = 0;
    std::vector<std::size_t> blocks;  // indices into blocks_, in address order
  };
  // A pool's cached free blocks, ordered as get_free_block searches them: by stream, size, then
  // address (stream, size, segment, offset, block).
  using FreeKey = std::tuple<Stream, double, std::size_t, double, std::size_t>;
  FreeKey key_of(std::size_t index) const;
  std::set<FreeKey>& pool_of(std::size_t index);
  // Under expandable segments: the block that holds `size` where the stream's segment of its pool
  // has unmapped address space: its lowest unmapped block with room (with the free block before
  // it), else its end, mapped by whole pages as needed.
  std::size_t grow_expandable(double size, Stream stream, bool small);
  // A free block's size with the unmapped space after it (infinite at its segment's end).
  double expandable_size(std::size_t index) const;
  // Where a block is in its segment's address order: a binary search by its offset (the blocks
  // tile the segment, each at a larger offset than the one before).
  std::size_t position_in_segment(std::size_t index) const;
  // The run of free and unmapped blocks of `segment` from `position` mapped and merged into one
  // free block of `size` or more (the segment grown at its end if the run reaches it).
  std::size_t map_run(std::size_t segment, std::size_t position, double size, double page);
  AllocatorConfig config_;
  std::vector<Block> blocks_;
  std::vector<Segment> segments_;
  std::set<FreeKey> small_free_;
  std::set<FreeKey> large_free_;
  double allocated_ = 0;
  double reserved_ = 0;
  double peak_allocated_ = 0;
  double peak_reserved_ = 0;
};

}  // namespace trainmem
