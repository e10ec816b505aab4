import { useRef, useState } from "react";

interface Props {
  disabled?: boolean;
  onFiles: (files: File[]) => void;
}

/** Drag-and-drop area that is also a keyboard-usable file picker (many files). */
export function DropZone({ disabled, onFiles }: Props) {
  const inputRef = useRef<HTMLInputElement>(null);
  const [over, setOver] = useState(false);

  return (
    <div
      className={`dropzone${over ? " over" : ""}`}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        const files = Array.from(e.dataTransfer.files);
        if (files.length && !disabled) onFiles(files);
      }}
    >
      <p>Drop files here, or</p>
      <label htmlFor="file-input" className="button-like">
        Choose files
      </label>
      <input
        id="file-input"
        ref={inputRef}
        type="file"
        multiple
        disabled={disabled}
        className="visually-hidden-input"
        onChange={(e) => {
          const files = Array.from(e.target.files ?? []);
          if (files.length) onFiles(files);
          if (inputRef.current) inputRef.current.value = "";
        }}
      />
    </div>
  );
}
