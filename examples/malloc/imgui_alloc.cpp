// examples/malloc/imgui_alloc.cpp — Dear ImGui on kiln's heap, tagged "UI": ImGui's
// allocator functions over kiln_heap_alloc/free. ImGui allocates from the thread that
// builds the UI, whose context it gets as user data. Builds a few frames of a window
// (no renderer: the draw data is only counted) and prints the tag's figures.
#include <kiln/kiln.h>
#include <imgui.h>

#include <cstdio>

struct ui_heap {
    kiln_ctx *ctx;
    kiln_tag  tag;
};

static void *ui_alloc(size_t size, void *user) {
    auto *heap = static_cast<ui_heap *>(user);
    return kiln_heap_alloc(heap->ctx, heap->tag, size, 0);
}

static void ui_free(void *ptr, void *user) {
    kiln_heap_free(static_cast<ui_heap *>(user)->ctx, ptr);
}

int main() {
    kiln_desc desc{};
    desc.worker_count = KILN_NO_WORKERS;
    kiln_runtime *rt = kiln_create(&desc);
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_tag_desc tag_desc{};
    tag_desc.name = "UI";
    ui_heap heap{ ctx, kiln_tag_create(rt, &tag_desc) };
    ImGui::SetAllocatorFunctions(ui_alloc, ui_free, &heap);   // before CreateContext

    ImGui::CreateContext();
    ImGuiIO &io = ImGui::GetIO();
    io.DisplaySize = ImVec2(1280, 720);
    io.IniFilename = nullptr;   // no imgui.ini written into the working directory
    unsigned char *pixels;
    int width, height;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &width, &height);   // the font atlas: on kiln too
    int vertices = 0;
    for (int frame = 0; frame < 30; frame++) {
        io.DeltaTime = 1.0f / 60.0f;
        ImGui::NewFrame();
        ImGui::Begin("kiln");
        ImGui::Text("frame %d", frame);
        for (int i = 0; i < 50; i++) ImGui::Text("entity %d: hp %d", i, (i * 37 + frame) % 100);
        ImGui::End();
        ImGui::Render();
        vertices = ImGui::GetDrawData()->TotalVtxCount;
    }
    kiln_tag_stats s;
    kiln_tag_stats_get(rt, heap.tag, &s);
    std::printf("UI: %d vertices in the last frame; %llu bytes live, peak %llu, %llu allocations\n",
                vertices, static_cast<unsigned long long>(s.live_bytes),
                static_cast<unsigned long long>(s.peak_bytes), static_cast<unsigned long long>(s.allocs));
    ImGui::DestroyContext();
    kiln_tag_stats_get(rt, heap.tag, &s);
    std::printf("after DestroyContext: %llu bytes live\n", static_cast<unsigned long long>(s.live_bytes));
    kiln_detach(ctx);
    kiln_destroy(rt);
    return s.live_bytes == 0 && vertices > 0 ? 0 : 1;
}
