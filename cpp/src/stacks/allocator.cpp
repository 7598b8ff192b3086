// PyTorch's CUDA caching allocator's block rules (allocator.hpp), for the reserved peak.
#include "trainmem/allocator.hpp"

#include <cmath>
#include <limits>

namespace trainmem {

namespace {

double round_up(double bytes, double multiple) { return std::ceil(bytes / multiple) * multiple; }

}  // namespace

double allocator_block_bytes(double request_bytes) {
  if (request_bytes < kAllocatorMinBlockBytes) return kAllocatorMinBlockBytes;
  return round_up(request_bytes, kAllocatorMinBlockBytes);
}

double allocator_segment_bytes(double block_bytes) {
  if (block_bytes <= kAllocatorSmallSizeBytes) return kAllocatorSmallBufferBytes;
  if (block_bytes < kAllocatorMinLargeAllocBytes) return kAllocatorLargeBufferBytes;
  return round_up(block_bytes, kAllocatorRoundLargeBytes);
}

CachingAllocator::FreeKey CachingAllocator::key_of(std::size_t index) const {
  const Block& block = blocks_[index];
  return {segments_[block.segment].stream, block.size, block.segment, block.offset, index};
}

std::set<CachingAllocator::FreeKey>& CachingAllocator::pool_of(std::size_t index) {
  return segments_[blocks_[index].segment].small ? small_free_ : large_free_;
}

CachingAllocator::Handle CachingAllocator::allocate(double bytes, Stream stream) {
  if (!(bytes > 0)) return kNothing;
  const double size = allocator_block_bytes(bytes);
  const bool small = size <= kAllocatorSmallSizeBytes;

  // Best fit among the cached free blocks of the request's pool and stream: the smallest that
  // holds it, the lowest address among equals (get_free_block's lower_bound over (stream, size,
  // address)).
  std::set<FreeKey>& pool = small ? small_free_ : large_free_;
  std::size_t best = kNothing;
  auto found = pool.lower_bound({stream, size, 0, 0, 0});
  // max_split_size_mb: an oversize block serves no request under the limit, and a request over it
  // only when less than kLargeBuffer would be left (get_free_block).
  const double limit = config_.max_split_size_bytes > 0 ? config_.max_split_size_bytes
                                                        : std::numeric_limits<double>::infinity();
  if (found != pool.end() && std::get<0>(*found) == stream &&
      ((size < limit && std::get<1>(*found) >= limit) ||
       (size >= limit && std::get<1>(*found) >= size + kAllocatorLargeBufferBytes))) {
    found = pool.end();
  }
  if (found != pool.end() && std::get<0>(*found) == stream) {
    best = std::get<4>(*found);
    pool.erase(found);
  } else if (config_.expandable_segments) {
    best = grow_expandable(size, stream, small);
  } else {
    Segment segment;
    segment.stream = stream;
    segment.small = small;
    segment.size = allocator_segment_bytes(size);
    Block block;
    block.segment = segments_.size();
    block.size = segment.size;
    blocks_.push_back(block);
    best = blocks_.size() - 1;
    segment.blocks.push_back(best);
    segments_.push_back(segment);
    reserved_ += segment.size;
  }

  // should_split: the small pool splits off any remainder of a block's worth, and so does the
  // large pool under expandable segments; otherwise the large pool only a remainder of more than
  // 1 MiB, for a request under max_split_size, and the request takes the whole block.
  const double remaining = blocks_[best].size - size;
  const bool split = small || config_.expandable_segments
                         ? remaining >= kAllocatorMinBlockBytes
                         : size < limit && remaining > kAllocatorSmallSizeBytes;
  if (split) {
    Block rest;
    rest.segment = blocks_[best].segment;
    rest.offset = blocks_[best].offset + size;
    rest.size = remaining;
    blocks_[best].size = size;
    blocks_.push_back(rest);
    const std::size_t rest_index = blocks_.size() - 1;
    std::vector<std::size_t>& order = segments_[rest.segment].blocks;
    for (std::size_t position = 0; position < order.size(); ++position) {
      if (order[position] == best) {
        order.insert(order.begin() + static_cast<std::ptrdiff_t>(position) + 1, rest_index);
        break;
      }
    }
    pool.insert(key_of(rest_index));
  }
  blocks_[best].free = false;
  allocated_ += blocks_[best].size;
  if (allocated_ > peak_allocated_) peak_allocated_ = allocated_;
  if (reserved_ > peak_reserved_) peak_reserved_ = reserved_;
  return best;
}

std::size_t CachingAllocator::grow_expandable(double size, Stream stream, bool small) {
  // The stream's segment of this pool: its address space reserved once, mapped as it grows.
  std::size_t segment_index = segments_.size();
  for (std::size_t index = 0; index < segments_.size(); ++index) {
    if (segments_[index].stream == stream && segments_[index].small == small) {
      segment_index = index;
    }
  }
  if (segment_index == segments_.size()) {
    Segment segment;
    segment.stream = stream;
    segment.small = small;
    segments_.push_back(segment);
  }
  // The free block at its end, if any, takes the request with the pages mapped after it.
  std::vector<std::size_t>& order = segments_[segment_index].blocks;
  std::size_t tail = kNothing;
  if (!order.empty() && blocks_[order.back()].free) {
    tail = order.back();
    pool_of(tail).erase(key_of(tail));
  }
  const double held = tail == kNothing ? 0 : blocks_[tail].size;
  const double page = small ? kAllocatorSmallBufferBytes : kAllocatorLargeBufferBytes;
  const double mapped = round_up(size - held, page);
  segments_[segment_index].size += mapped;
  reserved_ += mapped;
  if (tail != kNothing) {
    blocks_[tail].size += mapped;
    return tail;
  }
  Block block;
  block.segment = segment_index;
  block.offset = segments_[segment_index].size - mapped;
  block.size = mapped;
  blocks_.push_back(block);
  order.push_back(blocks_.size() - 1);
  return blocks_.size() - 1;
}

void CachingAllocator::empty_cache() {
  if (config_.expandable_segments) {
    // release_cached_blocks → release_blocks: each free block's whole pages unmapped
    // (ExpandableSegment::unmap: the pages wholly inside it; one it shares with a live block
    // stays). Those at a segment's end are given back here; whole pages between live blocks are
    // kept mapped (an overcount).
    for (Segment& segment : segments_) {
      if (segment.blocks.empty() || !blocks_[segment.blocks.back()].free) continue;
      const std::size_t block = segment.blocks.back();
      const double page = segment.small ? kAllocatorSmallBufferBytes : kAllocatorLargeBufferBytes;
      const double kept = round_up(blocks_[block].offset, page);
      const double unmapped = segment.size - kept;
      if (!(unmapped > 0)) continue;
      pool_of(block).erase(key_of(block));
      reserved_ -= unmapped;
      segment.size = kept;
      blocks_[block].size -= unmapped;
      if (blocks_[block].size > 0) {
        pool_of(block).insert(key_of(block));
      } else {
        segment.blocks.pop_back();
      }
    }
    return;
  }
  for (Segment& segment : segments_) {
    if (segment.blocks.size() != 1 || !blocks_[segment.blocks.front()].free) continue;
    const std::size_t block = segment.blocks.front();
    pool_of(block).erase(key_of(block));
    reserved_ -= segment.size;
    segment.size = 0;
    segment.blocks.clear();
    blocks_[block].size = 0;
  }
}

void CachingAllocator::free(Handle handle) {
  if (handle == kNothing || handle >= blocks_.size() || blocks_[handle].free) return;
  blocks_[handle].free = true;
  allocated_ -= blocks_[handle].size;
  std::set<FreeKey>& pool = pool_of(handle);
  // try_merge_blocks: absorb free neighbours in the segment; the merged block keeps the lower
  // address.
  std::vector<std::size_t>& order = segments_[blocks_[handle].segment].blocks;
  std::size_t position = 0;
  while (order[position] != handle) ++position;
  std::size_t merged = handle;
  if (position + 1 < order.size() && blocks_[order[position + 1]].free) {
    const std::size_t next = order[position + 1];
    pool.erase(key_of(next));
    blocks_[merged].size += blocks_[next].size;
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(position) + 1);
  }
  if (position > 0 && blocks_[order[position - 1]].free) {
    const std::size_t before = order[position - 1];
    pool.erase(key_of(before));
    blocks_[before].size += blocks_[merged].size;
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(position));
    merged = before;
  }
  pool.insert(key_of(merged));
}

}  // namespace trainmem
