import { fireEvent, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { DropZone } from "./DropZone";

describe("DropZone", () => {
  it("accepts many dropped files and files chosen with the picker", async () => {
    const onFiles = vi.fn();
    const { container } = render(<DropZone onFiles={onFiles} />);
    const a = new File(["# A"], "a.md", { type: "text/markdown" });
    const b = new File(["b"], "b.txt", { type: "text/plain" });
    fireEvent.drop(container.querySelector(".dropzone")!, { dataTransfer: { files: [a, b] } });
    expect(onFiles).toHaveBeenLastCalledWith([a, b]);

    await userEvent.upload(screen.getByLabelText("Choose files"), [b]);
    expect(onFiles).toHaveBeenLastCalledWith([b]);
  });
});
